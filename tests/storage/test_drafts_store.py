"""The tool draft store (`bridge.personal_tools.drafts`) on both backends: versions kept
per chat and tenant, a draft expiring 7 days after its newest version, at most twenty
versions, what a consent prompt showed, only masked source, and another connection (another
instance) seeing every write; a chat without drafts read without a statement while the
process's `TableChanges` watches, and a draft another instance writes seen after its notify."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bridge.core.sessions import SessionKey
from bridge.loadout.db_changes import TableChanges
from bridge.personal_tools.drafts import KEEP_MS, DraftStore
from bridge.storage.protocol import Database
from bridge.types.masked import Unmasked
from forge.library import ToolSpec, build_spec
from tests.masking import m
from tests.storage.conftest import OpenDb
from tests.waits import until

ONE = 'def run() -> int:\n    """One."""\n    return 1\n'
TWO = 'def run() -> int:\n    """Two."""\n    return 2\n'
CHAT = SessionKey("local", "web", "c1")


def spec(source: str, name: str = "num") -> ToolSpec:
    made = build_spec(name, "a number", source).tool
    assert made is not None
    return made


class Ms:
    def __init__(self) -> None:
        self.now = 1_800_000_000_000

    def __call__(self) -> int:
        return self.now


async def test_versions_are_kept_and_a_draft_expires_after_seven_days(
    db: Database, open_db: OpenDb
) -> None:
    clock = Ms()
    store = DraftStore(db, clock)
    first = await store.put(CHAT, spec(ONE), m(ONE))
    assert (first.current.version, first.previous, first.changed) == (1, None, True)
    same = await store.put(CHAT, spec(ONE), m(ONE))
    assert same.current.version == 1 and not same.changed
    clock.now += KEEP_MS - 1000
    second = await store.put(CHAT, spec(TWO), m(TWO))
    assert second.previous is not None and second.previous.spec.source == ONE
    assert (second.current.version, second.changed) == (2, True)
    other = DraftStore(await open_db(), clock)  # another instance
    assert await other.by_hash(CHAT, "num", first.current.spec.sha256) is not None
    assert [d.spec.source for d in await other.drafts(CHAT)] == [TWO]
    assert await other.drafts(SessionKey("local", "web", "c2")) == []
    assert await other.drafts(SessionKey("bob", "web", "c1")) == []
    clock.now += KEEP_MS - 1000  # v2 is younger than 7 days: still there
    latest = await store.latest(CHAT, "num")
    assert latest is not None and latest.version == 2
    clock.now += 2000  # now it is not
    assert await store.latest(CHAT, "num") is None and await store.drafts(CHAT) == []
    assert await store.prune() == 2
    assert await db.fetch_value("SELECT COUNT(*) FROM tool_drafts") == 0


async def test_at_most_twenty_versions_and_only_masked_source(db: Database) -> None:
    store = DraftStore(db, Ms())
    for n in range(25):
        source = f'def run() -> int:\n    """N."""\n    return {n}\n'
        await store.put(CHAT, spec(source), m(source))
    versions = [r[0] for r in await db.fetch_all("SELECT version FROM tool_drafts")]
    assert sorted(versions) == list(range(6, 26))
    with pytest.raises(Unmasked):
        await store.put(CHAT, spec(ONE), ONE)  # type: ignore[arg-type]


async def test_what_a_prompt_showed_and_a_saved_draft_goes(db: Database) -> None:
    store = DraftStore(db, Ms())
    written = await store.put(CHAT, spec(ONE), m(ONE))
    assert await store.shown(CHAT, "num") is None
    await store.show(CHAT, "num", "aaa")
    await store.show(CHAT, "num", written.current.spec.sha256)  # the newer prompt wins
    assert await store.shown(CHAT, "num") == written.current.spec.sha256
    await store.put(SessionKey("bob", "web", "c1"), spec(ONE), m(ONE))
    await store.remove(CHAT, "num")
    assert await store.latest(CHAT, "num") is None and await store.shown(CHAT, "num") is None
    assert await db.fetch_value("SELECT COUNT(*) FROM tool_drafts") == 1, "bob's stays"


class Counted:
    """The database, counting the statements that read `tool_drafts`."""

    def __init__(self, db: Database) -> None:
        self.db, self.reads = db, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)

    async def fetch_all(self, sql: str, params: Any = None) -> Any:
        self.reads += "tool_drafts" in sql
        return await self.db.fetch_all(sql, params)


@contextlib.asynccontextmanager
async def watched(changes: TableChanges) -> AsyncIterator[None]:
    task = asyncio.create_task(changes.watch())
    await changes.subscribed()
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_a_chat_without_drafts_costs_no_statement_and_other_instances_writes_show(
    db: Database, open_db: OpenDb
) -> None:
    clock, counted = Ms(), Counted(db)
    changes = TableChanges(counted)  # type: ignore[arg-type]
    store = DraftStore(counted, clock, changes=changes)  # type: ignore[arg-type]
    unwatched = Counted(db)
    plain = DraftStore(unwatched, clock, changes=TableChanges(unwatched))  # type: ignore[arg-type]
    other_db = await open_db()
    other_changes = TableChanges(other_db)
    other = DraftStore(other_db, clock, changes=other_changes)  # another instance

    async def costs_nothing(key: SessionKey) -> None:
        """With the mirror current, a chat known to have no drafts is answered without a
        statement. On PostgreSQL the LISTEN behind `watched` may wake the topic once after
        `subscribed()` returned: a check that a wake moved is made again."""
        while True:
            generation = changes.generation
            assert await store.drafts(key) == []  # the tenant's chats read, if stale
            reads = counted.reads
            got = await store.drafts(key)
            if changes.generation == generation:
                assert got == [] and counted.reads == reads, "known: none"
                return

    async with watched(changes), watched(other_changes):
        assert await store.drafts(CHAT) == [] and counted.reads >= 1  # the tenant's chats
        await costs_nothing(CHAT)
        await costs_nothing(SessionKey("local", "web", "c2"))
        assert await other.drafts(CHAT) == []
        generation = changes.generation
        await other.put(CHAT, spec(ONE), m(ONE))  # written and notified by the other one
        assert [d.spec.source for d in await other.drafts(CHAT)] == [ONE], "its own at once"
        await until(lambda: changes.generation > generation, "the other instance's notify")
        assert [d.spec.source for d in await store.drafts(CHAT)] == [ONE]
        generation = changes.generation
        await store.put(SessionKey("local", "web", "c2"), spec(TWO), m(TWO))
        assert [d.spec.source for d in await store.drafts(SessionKey("local", "web", "c2"))] == [
            TWO
        ], "its own write seen before its notify comes back"
        await until(lambda: changes.generation > generation, "its own notify")
        assert await store.drafts(SessionKey("local", "web", "c3")) == []  # read again once
        reads = counted.reads
        assert await store.drafts(SessionKey("local", "web", "c3")) == []
        assert await store.drafts(SessionKey("local", "web", "c2"))
        assert counted.reads == reads + 1, "c3: no statement; c2: its drafts"
        await store.remove(CHAT, "num")
        assert await store.drafts(CHAT) == []
    for _ in range(2):  # nobody watches: nothing vouches for a mirror, the drafts are read
        assert await plain.drafts(SessionKey("local", "web", "c3")) == []
        assert [d.spec.source for d in await plain.drafts(SessionKey("local", "web", "c2"))] == [
            TWO
        ]
    assert unwatched.reads == 4, "one statement a call, as without the mirror"
