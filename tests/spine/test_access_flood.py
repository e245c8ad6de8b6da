"""Strangers cannot grow the audit chain without bound (issue 9, item 9).

The limiter is driven with an injected clock (no sleeping); the flood goes
through the real core of a real roost with a real audit chain on disk.
"""

from __future__ import annotations

import os
from pathlib import Path

from bridge.app.build import build
from bridge.core.config import Settings
from bridge.core.strangers import StrangerAudit, StrangerLimits
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import Inbound
from tests.conftest import Clock, ScriptedBackend

LIMITS = StrangerLimits(window_s=3600.0, max_tracked=100, records_per_window=10)


def chain_lines(home: Path) -> int:
    path = home / "audit" / "chain.jsonl"
    return len(path.read_bytes().splitlines()) if path.exists() else 0


async def test_one_record_per_identity_per_window_with_the_count(clock: Clock) -> None:
    audit = MemoryAudit()
    strangers = StrangerAudit(audit, clock, LIMITS)
    for _ in range(500):
        await strangers.record("access.refused", "telegram", "999", {})
    assert audit.events == [
        ("access.refused", None, {"channel": "telegram", "identity": "999", "suppressed": 0})
    ]
    clock.advance(3599)
    await strangers.record("access.refused", "telegram", "999", {})
    assert len(audit.events) == 1, "still inside the window"
    clock.advance(1)
    await strangers.record("access.refused", "telegram", "999", {})
    assert audit.events[-1] == (
        "access.refused",
        None,
        {"channel": "telegram", "identity": "999", "suppressed": 500},
    )
    # another kind of event is counted on its own
    await strangers.record("pairing.failed", "telegram", "999", {"locked": True})
    assert audit.events[-1] == (
        "pairing.failed",
        None,
        {"channel": "telegram", "identity": "999", "locked": True, "suppressed": 0},
    )


async def test_a_flood_of_distinct_strangers_is_capped_and_aggregated(clock: Clock) -> None:
    audit = MemoryAudit()
    strangers = StrangerAudit(audit, clock, LIMITS)
    for n in range(10_000):
        await strangers.record("access.refused", "telegram", str(n), {})
    assert len(audit.events) == LIMITS.records_per_window
    assert strangers.tracked <= LIMITS.max_tracked, "memory stays bounded"
    await strangers.flush()
    assert audit.events[-1] == (
        "access.flood",
        None,
        {
            "event": "access.refused",
            "count": 10_000 - LIMITS.records_per_window,
            "identities": 10_000 - LIMITS.records_per_window,
            "window_s": 3600,
        },
    )
    await strangers.flush()
    assert len(audit.events) == LIMITS.records_per_window + 1, "flushing twice adds nothing"
    # the next window's first record writes what was still pending first
    for n in range(10_000, 10_050):
        await strangers.record("access.refused", "telegram", str(n), {})
    clock.advance(3600)
    before = len(audit.events)
    await strangers.record("access.refused", "telegram", "new", {})
    flood, new = audit.events[before:]
    assert flood[0] == "access.flood" and flood[2]["count"] == 50
    assert new[2]["identity"] == "new"


async def test_memory_is_bounded_and_evicted_counts_are_not_lost(clock: Clock) -> None:
    audit = MemoryAudit()
    limits = StrangerLimits(window_s=3600.0, max_tracked=5, records_per_window=1000)
    strangers = StrangerAudit(audit, clock, limits)
    for n in range(5):
        for _ in range(3):  # one record, two suppressed each
            await strangers.record("access.refused", "telegram", str(n), {})
    for n in range(5, 50):
        await strangers.record("access.refused", "telegram", str(n), {})
    assert strangers.tracked == 5
    await strangers.flush()
    flood = [e for e in audit.events if e[0] == "access.flood"]
    assert flood == [
        (
            "access.flood",
            None,
            {"event": "access.refused", "count": 10, "identities": 5, "window_s": 3600},
        )
    ]


async def test_ten_thousand_strangers_through_the_core_grow_the_chain_boundedly(
    settings: Settings, clock: Clock
) -> None:
    roost = await build(settings, backend=ScriptedBackend("never"), clock=clock)
    home = settings.home
    try:
        start = chain_lines(home)
        for n in range(10_000):
            inbound = Inbound("telegram", str(10_000_000 + n), str(n), "hi", os.urandom(4).hex())
            final = await roost.core.handle(inbound)
            assert final.kind == "refusal"
        # the same strangers again, in the same hour: not one more record, and
        # they were told once already, so the core answers nothing at all
        for n in range(0, 10_000, 7):
            inbound = Inbound("telegram", str(10_000_000 + n), str(n), "again", "x")
            again = await roost.core.handle(inbound)
            assert again.kind == "silent" and again.text == ""
        await roost.core.drain(0)
        grown = chain_lines(home) - start
        bound = StrangerLimits().records_per_window + 1
        assert grown <= bound, f"{grown} records for 10,000 strangers"
        assert grown == bound, "the per-identity records plus one aggregate"
        assert roost.backend.requests == []
    finally:
        await roost.aclose()
    assert not (home / "tenants").exists() or not any((home / "tenants").iterdir())
