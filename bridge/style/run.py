"""The state of one learner sweep: its report, audit-before-effect changes, dry runs.

`SweepRun` is what every stage (`style/live.py`, `style/candidates.py`)
works on: the store, the thresholds, the graded turns read from the chain,
and the report it fills. `change` commits DB writes only after their audit
events were written; a dry run rolls everything back and emits nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from bridge.style.aggregate import GradedTurn
from bridge.style.rules import DAY_MS, Thresholds
from bridge.style.store import Bullet, StyleStore, SweepRow
from bridge.types.audit_sink import AuditSink, Event


@dataclass
class SweepReport:
    now_ms: int
    dry_run: bool
    tenants: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    candidates: int = 0
    judged: int = 0
    pending: int = 0
    promoted: int = 0
    rejected: int = 0
    rolled_back: int = 0
    judge_status: str = "ok"

    def row(self) -> SweepRow:
        return SweepRow(
            self.now_ms,
            len(self.tenants),
            self.candidates,
            self.judged,
            self.pending,
            self.promoted,
            self.rejected,
            self.rolled_back,
            self.judge_status,
        )


class SweepRun:
    """The state of one sweep; each method is one stage for one tenant."""

    def __init__(
        self,
        store: StyleStore,
        audit: AuditSink,
        t: Thresholds,
        report: SweepReport,
        turns: list[GradedTurn],
        dry_run: bool,
    ) -> None:
        self.store, self.audit, self.t, self.report = store, audit, t, report
        self.turns, self.dry = turns, dry_run
        self.now = report.now_ms

    @contextlib.asynccontextmanager
    async def outer(self) -> AsyncIterator[None]:
        """A dry run does everything inside one transaction that is rolled back."""
        if not self.dry:
            yield
            return
        async with self.store.discarded():
            yield

    @contextlib.asynccontextmanager
    async def change(self, events: list[Event]) -> Any:
        """One state change: DB writes in a transaction, committed after the events."""
        if self.dry:
            yield
            self.report.events.extend(events)
            return
        async with self.store.transaction():
            yield
            await self.audit.emit_many(events)
        self.report.events.extend(events)

    def say(self, tenant: str, line: str) -> None:
        self.report.lines.append(f"{tenant}: {line}")

    @property
    def cooldown_ms(self) -> int:
        return self.now + self.t.cooldown_days * DAY_MS


def lowest(live: Sequence[Bullet]) -> Bullet | None:
    """The live bullet to drop at the cap: lowest score, then the oldest, then lowest id."""
    if not live:
        return None
    return min(live, key=lambda b: (b.score, b.live_since_ms or 0, b.id))


def rolled_back(tenant: str, b: Bullet, pct: int, days: int) -> Event:
    return (
        "style.rolled_back",
        tenant,
        {"bullet_id": b.bid, "skill": b.skill, "negative_pct": pct, "cooldown_days": days},
    )
