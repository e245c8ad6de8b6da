"""What the cluster tests check, shared: open work, who holds which chats, every message
answered once in order, and a clean stop (waiting: `tests.waits.until`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import asyncpg

from tests.cluster.kit import Cluster, Instance


async def open_work(url: str) -> int:
    conn = await asyncpg.connect(url)
    try:
        return int(
            await conn.fetchval(
                "SELECT (SELECT COUNT(*) FROM channel_inbox WHERE state IN ('new', 'working'))"
                " + (SELECT COUNT(*) FROM outbox WHERE state = 'queued')"
            )
        )
    finally:
        await conn.close()


async def chats_leased_by(url: str, instance: str) -> list[str]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT name FROM storage_leases WHERE name LIKE 'chat:%' AND owner LIKE $1",
            f"{instance}:%",
        )
    finally:
        await conn.close()
    return [r["name"] for r in rows]


# what `bridge.core.dispatch` logs when an instance finds, after an item ran, that its chat's
# lease ran out meanwhile (its loop stalled longer than `lease_s`: on a machine loaded far
# past its cores, 2 s is reachable): another instance may have answered that item too
LEASE_RAN_OUT = "lease of a chat ran out while its item ran"


def assert_each_once_in_order(
    got: Mapping[object, list[str]],
    asked: Mapping[object, list[str]],
    instances: Sequence[Instance] = (),
) -> None:
    """Every question answered ("echo: <question>") exactly once, in each person's order.

    The one documented exception (docs/scaling.md, "At-least-once window"): an instance
    whose lease ran out while its turn ran, which it logs. Then a question may be answered
    twice, and only then: every question is still answered, first answers in order."""
    every = Counter(text for texts in got.values() for text in texts)
    twice = [t for t, n in every.items() if n > 1]
    expected = {p: [f"echo: {q}" for q in qs] for p, qs in asked.items()}
    if twice and any(LEASE_RAN_OUT in i.stderr() for i in instances):
        assert {p: list(dict.fromkeys(texts)) for p, texts in got.items()} == expected
        return
    warned = [line for i in instances for line in i.stderr().splitlines() if "WARNING" in line]
    assert twice == [], "\n".join(warned[-40:])  # what the instances said, to find out why
    assert got == expected


async def stop_clean(
    cluster: Cluster, survivors: Sequence[Instance], live: Sequence[Instance], url: str
) -> None:
    """Stop the survivors (exit 0), no chat lease left, every instance's chain verifies."""
    for inst in survivors:
        assert await cluster.stop(inst) == 0, inst.stderr()[-3000:]
    assert await chats_leased_by(url, "") == []  # a clean stop released them
    code, out = await cluster.audit_verify()
    assert code == 0, out
    assert all(i.name in out for i in live), out
