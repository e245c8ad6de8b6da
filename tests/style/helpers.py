"""Shared helpers for the style tests: records, a fake judge backend, a store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from bridge.app.database import open_database
from bridge.storage.protocol import Database
from bridge.style.rules import DAY_MS, cohort_bit
from bridge.style.store import StyleStore
from bridge.types.backend import BackendError, Finish, ModelEvent, ModelRequest, TextDelta

T0 = 1_800_000_000_000  # ms


class FakeJudge:
    """A Backend whose answers come from a list: a string, or a BackendError to raise."""

    name = "fake"

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.requests: list[ModelRequest] = []

    def describe(self) -> str:
        return "fake judge"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        answer = self.answers.pop(0) if self.answers else "FAITHFUL"
        if isinstance(answer, BaseException):
            raise answer
        yield TextDelta(str(answer))
        yield Finish("stop")

    async def aclose(self) -> None:
        return None


def outage() -> BackendError:
    return BackendError("unavailable", "the model server is down")


def graded(tenant: str, ts: int, signal: str, skills: list[str], prev: str) -> dict[str, Any]:
    return {
        "event": "skill.outcome_graded",
        "tenant": tenant,
        "ts": ts,
        "details": {"signal": signal, "skills": skills, "prev_run_id": prev},
    }


def signals(
    tenant: str, skill: str, negative: int, positive: int, start: int, tag: str = "m"
) -> list[dict[str, Any]]:
    """`negative` rejections then `positive` approvals, one minute apart from `start`."""
    out = []
    for i in range(negative + positive):
        sig = "rejection" if i < negative else "approval"
        out.append(graded(tenant, start + i * 60_000, sig, [skill], f"{tag}{i}"))
    return out


def msg_ids_with_bit(bullet: str, bit: int, n: int, tag: str = "ab") -> list[str]:
    out: list[str] = []
    i = 0
    while len(out) < n:
        mid = f"{tag}{i}"
        if cohort_bit(mid, bullet) == bit:
            out.append(mid)
        i += 1
    return out


def cohort_records(
    tenant: str,
    skill: str,
    bullet: str,
    start: int,
    with_: tuple[int, int],
    without: tuple[int, int],
    tag: str = "ab",
) -> list[dict[str, Any]]:
    """Graded turns after `start`: (negative, total) with the bullet and without it."""
    out = []
    for bit, (neg, total) in ((1, with_), (0, without)):
        for i, mid in enumerate(msg_ids_with_bit(bullet, bit, total, f"{tag}{bit}-")):
            sig = "rephrase" if i < neg else "approval"
            out.append(graded(tenant, start + 3_600_000 + i * 60_000, sig, [skill], mid))
    return out


OPENED: list[Database] = []  # closed after each test (tests/style/conftest.py)


async def open_store(tmp_path: Path) -> tuple[Database, StyleStore]:
    db = await open_database(tmp_path / "roost.db")
    OPENED.append(db)
    return db, StyleStore(db)


DAY = DAY_MS
