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


def assert_each_once_in_order(
    got: Mapping[object, list[str]], asked: Mapping[object, list[str]]
) -> None:
    """Every question answered ("echo: <question>") exactly once, in each person's order."""
    every = Counter(text for texts in got.values() for text in texts)
    assert [t for t, n in every.items() if n > 1] == []
    assert got == {p: [f"echo: {q}" for q in qs] for p, qs in asked.items()}


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
