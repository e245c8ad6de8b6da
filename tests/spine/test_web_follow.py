"""`Follow` (bridge/channels/web/follow.py) over a real database: two of one database
stand for two instances (owners "a" and "b"). B sees A's turn of the caller's own
chat only (another identity's chat of the same id runs nowhere); B's followers keep
one viewer mark that A reads as watched until the last of them ends; a follower
returns when A lets the chat's lease go, or when its page is gone; the final read
back is the stored answer (a stopped one marked again; nothing stored: silent).
The instances themselves: tests/cluster/test_web_follow.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.app.database import open_database
from bridge.channels.web.follow import Follow, stored_final
from bridge.channels.web.relay import lease_of
from bridge.core.running import stopped_text
from bridge.core.sessions import SessionKey
from bridge.storage.leases import Leases
from bridge.storage.protocol import Database
from bridge.types.messages import Final
from tests.masking import m
from tests.sessions_kit import store_on
from tests.waits import HANG_S


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    opened = await open_database(tmp_path / "roost.db")
    try:
        yield opened
    finally:
        await opened.aclose()


async def test_a_follower_marks_the_chat_watched_until_the_turn_ends(db: Database) -> None:
    leases = Leases(db)
    a, b = Follow(leases, "a", poll_s=0.01), Follow(leases, "b", poll_s=0.01)
    assert await b.elsewhere("local", "c") is False  # nobody holds it: nothing runs
    await leases.acquire(lease_of("local", "c"), "a", 60_000)
    assert await b.elsewhere("local", "c") is True
    assert await a.elsewhere("local", "c") is False  # its own turn: not elsewhere
    assert await b.elsewhere("tenant:bob", "c") is False  # bob's "c" runs nowhere
    assert await a.watched("local", "c") is False

    gone = False
    async with asyncio.timeout(HANG_S):
        async with b.following("local", "c"):
            async with b.following("local", "c"):
                assert await b.ended("local", "c", lambda: True) is False  # page gone at once
                follower = asyncio.create_task(b.ended("local", "c", lambda: gone))
                while not await a.watched("local", "c"):
                    await asyncio.sleep(0.01)
            assert await a.watched("local", "c") is True  # one follower here is left
            await leases.release(lease_of("local", "c"), "a")  # A's turn ended
            assert await follower is True
        assert await a.watched("local", "c") is False  # the last one let the mark go


async def test_the_final_is_the_answer_the_turn_stored(db: Database) -> None:
    store, key = store_on(db), SessionKey("local", "web", "c")
    assert await stored_final(store.archive, key, 100.0) == Final("", kind="silent")
    await store.append(key, m("q1"), m("a1"), "m1", 100.0)
    assert await stored_final(store.archive, key, 101.0) == Final("a1")
    await store.append(key, m("q2"), m(stopped_text("a2 so far")), "m2", 102.0)
    got = await stored_final(store.archive, key, 103.0)
    assert got == Final("a2 so far … [stopped]", kind="stopped")
