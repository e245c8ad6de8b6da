"""The style learner's store (`bridge.style.store`) on both backends: bullets and sweeps,
a state change's transaction (committed with its events, rolled back on an error), a dry
run rolled back whole, and the mirror of shown bullets the prompt reads."""

from __future__ import annotations

import pytest

from bridge.loadout.db_changes import TableChanges, watching
from bridge.storage.protocol import Database
from bridge.style.rules import Counts
from bridge.style.store import StyleStore, SweepRow
from tests.storage.conftest import OpenDb
from tests.waits import until


async def test_bullets_are_added_updated_and_read_per_tenant(db: Database) -> None:
    store = StyleStore(db)
    a = await store.add_candidate("alice", "deploy", "be brief", Counts(6, 3), 1000)
    b = await store.add_candidate("alice", "review", "cite lines", Counts(5, 2), 1001)
    c = await store.add_candidate("bob", "deploy", "ask first", Counts(4, 4), 1002)
    assert (a.state, a.signal_count, a.negative_count, a.created_ms) == ("pending", 6, 3, 1000)
    assert a.id < b.id < c.id and a.bid != b.bid
    await store.update(a.id, 2000, state="live", live_since_ms=2000, score=7)
    await store.update(b.id, 2001, state="rejected", outcome="overfit", cooldown_until_ms=9000)
    got = await store.get(a.id)
    assert got is not None and (got.state, got.updated_ms, got.score) == ("live", 2000, 7)
    assert [x.id for x in await store.tenant("alice")] == [a.id, b.id]
    assert [x.id for x in await store.tenant("alice", ("live",))] == [a.id]
    assert [x.tenant for x in await store.all(("pending", "live"))] == ["alice", "bob"]
    assert await store.tenants() == ["alice", "bob"]
    assert await store.cooldown_until("alice", "review") == 9000
    assert await store.cooldown_until("alice", "nothing") == 0
    with pytest.raises(ValueError):
        await store.update(a.id, 1, tenant="bob")
    assert await store.last_sweep() is None
    for at in (5, 9, 7):
        await store.record_sweep(SweepRow(at, 2, 1, 0, 1, 0, 0, 0, "ok"))
    last = await store.last_sweep()
    assert last is not None and last.at_ms == 9


async def test_a_change_commits_together_or_not_at_all(db: Database) -> None:
    store = StyleStore(db)
    a = await store.add_candidate("alice", "deploy", "be brief", Counts(6, 3), 1000)
    with pytest.raises(RuntimeError):
        async with store.transaction():
            await store.update(a.id, 2000, state="shadow", shadow_since_ms=2000)
            raise RuntimeError("the audit chain refused")
    assert (await store.get(a.id)).state == "pending"  # type: ignore[union-attr]
    async with store.transaction():
        await store.update(a.id, 2000, state="shadow", shadow_since_ms=2000)
    assert (await store.get(a.id)).state == "shadow"  # type: ignore[union-attr]


async def test_a_dry_run_writes_nothing(db: Database) -> None:
    store = StyleStore(db)
    a = await store.add_candidate("alice", "deploy", "be brief", Counts(6, 3), 1000)
    async with store.discarded():
        await store.update(a.id, 2000, state="live")
        await store.add_candidate("alice", "other", "x", Counts(1, 1), 1000)
        async with store.transaction():  # a change inside: a savepoint
            await store.record_sweep(SweepRow(1, 1, 1, 0, 0, 0, 0, 0, "ok"))
        assert len(await store.tenant("alice")) == 2  # seen inside
    assert [(x.id, x.state) for x in await store.tenant("alice")] == [(a.id, "pending")]
    assert await store.last_sweep() is None


async def test_shown_bullets_are_mirrored_and_another_connections_change_reaches_them(
    open_db: OpenDb,
) -> None:
    mine, theirs = await open_db(), await open_db()
    changes = TableChanges(mine)
    store = StyleStore(mine, changes)
    stop = watching(changes)
    try:
        await changes.prepare("alice")
        assert store.cached("alice") == ()
        a = await store.add_candidate("alice", "deploy", "be brief", Counts(6, 3), 1000)
        token = changes.token(("style_bullets",), "alice")
        assert token is not None  # a pending bullet is not shown: nothing moved
        await store.update(a.id, 2000, judge_attempts=1)  # pending still
        await store.update(a.id, 2000, state="shadow", shadow_since_ms=2000)
        assert store.cached("alice") is None  # dropped: read again at its next use
        await changes.prepare("alice")
        assert [(b.id, b.state) for b in store.cached("alice") or ()] == [(a.id, "shadow")]
        assert changes.token(("style_bullets",), "alice") != token
        generation = changes.generation
        await StyleStore(theirs).update(a.id, 3000, state="live", live_since_ms=3000)
        await until(lambda: changes.generation > generation, "the other connection's notify")
        await changes.prepare("alice")
        assert [(b.id, b.state) for b in store.cached("alice") or ()] == [(a.id, "live")]
    finally:
        await stop()
