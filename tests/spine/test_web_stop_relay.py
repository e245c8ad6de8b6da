"""`StopRelay` (bridge/channels/web/relay.py) over a real database: two relays of one
database stand for two instances (owners "a" and "b"; SQLite wakes this process's
own notifies at once). B's ask reaches A only for a chat whose lease A holds, A stops
only the chats marked for it (a wake without a mark stops nothing), a mark is taken
once, and a chat nobody else holds is "nothing runs elsewhere". The instances
themselves: tests/cluster/test_web_stop.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.channels.web.relay import MARK, StopRelay, lease_of, serving, topic_of
from bridge.storage.leases import Leases
from bridge.storage.protocol import Database
from bridge.storage.schema import MIGRATIONS
from bridge.storage.sqlite import SqliteDatabase
from tests.waits import HANG_S, until


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    opened = await SqliteDatabase.open(tmp_path / "roost.db")
    await opened.migrate(MIGRATIONS)
    try:
        yield opened
    finally:
        await opened.aclose()


async def _gone(leases: Leases, name: str) -> bool:
    return await leases.holder(name) is None


async def test_an_ask_stops_only_the_marked_chat_of_the_instance_holding_it(
    db: Database,
) -> None:
    leases = Leases(db)
    a, b = StopRelay(db, leases, "a"), StopRelay(db, leases, "b")
    stopped: list[tuple[str, str]] = []

    async def stop_here(identity: str, chat: str) -> bool:
        stopped.append((identity, chat))
        return True

    assert await b.ask("local", "c") is False  # nobody holds the chat: nothing runs
    for chat in ("c", "d"):
        assert await leases.acquire(lease_of("local", chat), "a", 60_000) is not None
    assert await a.ask("local", "c") is False  # its own lease: nothing runs elsewhere
    closer = serving(a, stop_here)
    try:
        async with asyncio.timeout(HANG_S):
            with a.holding("local", "c"), a.holding("local", "d"):
                await db.notify(topic_of("a"))  # a wake with no mark
                assert await b.ask("tenant:bob", "d") is False  # bob's own "d" runs nowhere
                assert await b.ask("local", "d") is True
                await until(lambda: stopped, "the relayed stop")
                assert stopped == [("local", "d")]
                assert await leases.holder(MARK + lease_of("local", "d")) is None  # taken
                await db.notify(topic_of("a"))
                assert await b.ask("local", "c") is True
                await until(lambda: len(stopped) == 2, "the second relayed stop")
                assert stopped == [("local", "d"), ("local", "c")]
            # the turn ended here (its lease not let go yet): the mark is dropped unused,
            # and the chat's next turn here is not stopped by it
            assert await b.ask("local", "c") is True
            mark = MARK + lease_of("local", "c")
            await until(lambda: _gone(leases, mark), "the mark taken")
            with a.holding("local", "c"), a.holding("local", "d"):
                assert await b.ask("local", "d") is True
                await until(lambda: len(stopped) == 3, "the third relayed stop")
            assert stopped == [("local", "d"), ("local", "c"), ("local", "d")]
    finally:
        await closer()


async def test_a_turn_not_running_yet_is_stopped_once_it_runs_while_its_hold_lasts(
    db: Database,
) -> None:
    """The lease is taken a moment before the core runs the turn: a stop relayed in
    that moment is tried again until the turn runs; a hold that ends gives it up."""
    leases = Leases(db)
    a, b = StopRelay(db, leases, "a", retry_s=0.01), StopRelay(db, leases, "b")
    running = asyncio.Event()
    tries: list[tuple[str, str]] = []

    async def stop_here(identity: str, chat: str) -> bool:
        tries.append((identity, chat))
        return chat == "e" and running.is_set()

    for chat in ("e", "f"):
        assert await leases.acquire(lease_of("local", chat), "a", 60_000) is not None
    closer = serving(a, stop_here)
    try:
        async with asyncio.timeout(HANG_S):
            with a.holding("local", "e"):
                assert await b.ask("local", "e") is True
                await until(lambda: len(tries) >= 2, "tried again while not running")
                running.set()
                await until(lambda: a.stops == 0, "the stop done")
            assert tries[-1] == ("local", "e")
            with a.holding("local", "f"):
                assert await b.ask("local", "f") is True
                await until(lambda: ("local", "f") in tries, "the stop tried")
            await until(lambda: a.stops == 0, "the stop given up with its hold")
    finally:
        await closer()


def test_the_topic_is_a_valid_notify_topic_of_one_owner() -> None:
    topic = topic_of("node-1.example:0a1b2c")
    assert len(topic) == 48 and topic.startswith("webstop_")
    assert topic != topic_of("node-2.example:0a1b2c")
