"""A sweep over a real chain written with AuditChain, and the `roost style` actions."""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

import pytest

from bridge.app.channels_up import PLATFORMS
from bridge.app.database import open_database
from bridge.audit.chain import AuditChain
from bridge.audit.schema import schemas_for
from bridge.audit.verify import tail, verify
from bridge.cli.table import command
from bridge.core.config import Settings
from bridge.style.judge import Judge
from bridge.style.rules import Counts
from bridge.style.store import StyleStore
from bridge.style.sweep import Sweeper
from tests.style.helpers import DAY, T0, FakeJudge, open_store

SCHEMAS = schemas_for(PLATFORMS)  # the channels a daemon's chain keeps


async def write_turns(path: Path, clock: list[float], tenant: str, skill: str, n: int) -> None:
    chain = AuditChain(path, clock=lambda: clock[0], schemas=SCHEMAS)
    await chain.open()
    try:
        for i in range(n):
            mid = f"{sum(map(ord, tenant))}{i:04d}"  # a message id of a platform's shape
            await chain.emit(
                "message.received",
                tenant,
                {"channel": "web", "chat": "default", "msg_id": mid, "chars": 10},
            )
            clock[0] += 60
            await chain.emit(
                "skill.outcome_graded",
                tenant,
                {"signal": "rephrase", "skills": [skill], "prev_run_id": mid},
            )
    finally:
        await chain.aclose()


async def test_sweep_over_a_real_chain(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "chain.jsonl"
    clock = [(T0 - DAY) / 1000]
    await write_turns(path, clock, "alice", "deploy", 6)
    await write_turns(path, clock, "bob", "deploy", 3)
    _, store = await open_store(tmp_path)
    chain = AuditChain(path, clock=lambda: T0 / 1000, schemas=SCHEMAS)
    await chain.open()
    try:
        report = await Sweeper(store, Judge(FakeJudge("FAITHFUL")), chain).sweep_chain(path, T0)
    finally:
        await chain.aclose()
    assert report.tenants == ["alice", "bob"] and report.candidates == 1
    assert verify(path).ok
    recs = tail(path, 5)
    assert [r["event"] for r in recs[-2:]] == ["style.candidate", "style.judged"]
    assert recs[-1]["tenant"] == "alice" and "_dropped" not in recs[-1]["details"]  # type: ignore[operator]
    [b] = await store.tenant("alice")
    assert b.state == "shadow" and await store.tenant("bob") == []


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="roost")
    sub = parser.add_subparsers(dest="command")
    cmd = command("style")
    cmd.add_args(sub.add_parser(cmd.name, help=cmd.help))
    return parser.parse_args(argv)


def run(argv: list[str], settings: Settings) -> int:
    return command("style").run(parse(argv), settings)


async def seed_chain(settings: Settings) -> None:
    clock = [time.time() - 3600]
    await write_turns(settings.home / "audit" / "chain.jsonl", clock, "alice", "deploy", 6)


def test_cli_requires_an_action() -> None:
    with pytest.raises(SystemExit):
        parse(["style"])


def test_cli_sweep_offline_leaves_pending_then_status_and_list(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(seed_chain(settings))
    assert run(["style", "sweep", "--dry-run"], settings) == 0
    out = capsys.readouterr().out
    assert out.startswith("dry run: 1 tenant: 1 candidate")
    assert "judge: no model configured" in out
    assert run(["style", "status"], settings) == 0
    assert "last sweep: never" in capsys.readouterr().out
    assert run(["style", "sweep"], settings) == 0
    out = capsys.readouterr().out
    assert "1 candidate, 0 judged, 1 pending" in out and "no model configured" in out
    assert run(["style", "status"], settings) == 0
    out = capsys.readouterr().out
    assert "alice: 1 pending, 0 shadow, 0 live" in out and "awaiting the judge" in out
    assert "next sweep: daily at 04:45" in out
    assert run(["style", "list-live"], settings) == 0
    assert capsys.readouterr().out.strip() == "no live bullets"
    events = [r["event"] for r in tail(settings.home / "audit" / "chain.jsonl", 3)]
    assert events[-1] == "style.candidate"


async def live_bullets(settings: Settings) -> None:
    db = await open_database(settings.home / "roost.db")
    store = StyleStore(db)
    for tenant in ("alice", "bob"):
        row = await store.add_candidate(tenant, "deploy", f"bullet of {tenant}", Counts(8, 7), T0)
        await store.update(row.id, T0, state="live", live_since_ms=T0, score=120)
    await db.aclose()


def test_cli_list_live_per_tenant(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    settings.home.mkdir(parents=True, exist_ok=True)
    asyncio.run(live_bullets(settings))
    assert run(["style", "list-live", "--tenant", "bob"], settings) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("bob\tb-0002\tdeploy") and "alice" not in out[0]
    assert run(["style", "list-live"], settings) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 2
    (settings.home / "tenants" / "carol").mkdir(parents=True)  # a tenant, with no bullets
    assert run(["style", "list-live", "--tenant", "carol"], settings) == 0
    assert "carol: no live bullets" in capsys.readouterr().out
    assert run(["style", "list-live", "--tenant", "dave"], settings) == 2  # nobody: a typo
    assert "roost style list-live: there is no tenant 'dave'" in capsys.readouterr().err
