"""`Follow` (bridge/channels/web/follow.py) over a real database: three of one database
stand for three instances (owners "a", "b", "c"). B sees A's turn of the caller's
own chat only (another identity's chat of the same id runs nowhere); any instance's
follower renews the one viewer mark that A reads as watched, until it lapses after
the last look; a follower returns when A lets the chat's lease go, or when its page
is gone; the final read back is the stored answer (a stopped one marked again;
nothing stored: silent). The holder's `Viewers` asks `watched` after each grace
period and stops the turn once nobody follows it.
The instances themselves: tests/cluster/test_web_follow.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import cast

import pytest

from bridge.app.database import open_database
from bridge.channels.web.follow import VIEW_MS, Follow, stored_final
from bridge.channels.web.out import Viewers
from bridge.channels.web.relay import lease_of
from bridge.core.running import RunningTurns, stopped_text
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
    now = [0]
    leases = Leases(db, clock=lambda: now[0])
    a, b = Follow(leases, "a", poll_s=0.01), Follow(leases, "b", poll_s=0.01)
    c = Follow(leases, "c", poll_s=0.01)
    assert await b.elsewhere("local", "c") is False  # nobody holds it: nothing runs
    await leases.acquire(lease_of("local", "c"), "a", 60_000)
    assert await b.elsewhere("local", "c") is True
    assert await a.elsewhere("local", "c") is False  # its own turn: not elsewhere
    assert await b.elsewhere("tenant:bob", "c") is False  # bob's "c" runs nowhere
    assert await a.watched("local", "c") is False

    await b.mark("local", "c")
    assert await a.watched("local", "c") is True
    assert await a.watched("tenant:bob", "c") is False
    now[0] = VIEW_MS - 1
    await c.mark("local", "c")  # a third instance renews the same mark: no gap
    now[0] = VIEW_MS + 1
    assert await a.watched("local", "c") is True
    now[0] = 2 * VIEW_MS
    assert await a.watched("local", "c") is False  # lapsed after the last look

    async with asyncio.timeout(HANG_S):
        assert await b.ended("local", "c", lambda: True) is False  # the page went
        follower = asyncio.create_task(b.ended("local", "c", lambda: False))
        while not await a.watched("local", "c"):  # renewed at its looks
            await asyncio.sleep(0.01)
        await leases.release(lease_of("local", "c"), "a")  # A's turn ended
        assert await follower is True


async def test_the_final_is_the_answer_the_turn_stored(db: Database) -> None:
    store, key = store_on(db), SessionKey("local", "web", "c")
    assert await stored_final(store.archive, key, 100.0) == Final("", kind="silent")
    await store.append(key, m("q1"), m("a1"), "m1", 100.0)
    assert await stored_final(store.archive, key, 101.0) == Final("a1")
    await store.append(key, m("q2"), m(stopped_text("a2 so far")), "m2", 102.0)
    got = await stored_final(store.archive, key, 103.0)
    assert got == Final("a2 so far … [stopped]", kind="stopped")


class Turns:
    """A chat's running turn as `Viewers` sees it (`running`, `stop`)."""

    def __init__(self) -> None:
        self.stopped = asyncio.Event()

    def running(self, key: SessionKey) -> bool:
        return not self.stopped.is_set()

    async def stop(self, key: SessionKey) -> bool:
        self.stopped.set()
        return True


async def test_a_turn_watched_from_elsewhere_is_stopped_once_nobody_follows() -> None:
    key, turns, asked = SessionKey("local", "web", "c"), Turns(), asyncio.Queue[None]()
    followed = [True, True, False]

    async def watched(of: SessionKey) -> bool:
        assert of == key
        asked.put_nowait(None)
        return followed.pop(0)

    viewers = Viewers(cast(RunningTurns[SessionKey], turns), 0.001, watched)
    async with asyncio.timeout(HANG_S):
        viewers.enter(key)
        viewers.leave(key)  # the last stream here went: asked after each grace period
        await turns.stopped.wait()  # once it is no longer followed
        assert followed == [] and asked.qsize() == 3
    viewers.close()
