"""The terminal's inbox over the real outbox table, and telling whether a daemon runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bridge.app.instance import held, hold
from bridge.channels.terminal.inbox import SEEN_KEY, TerminalInbox
from bridge.loadout.chat_settings import ChatSettings
from bridge.schedule.outbox import OutboxStore
from bridge.schedule.planning import arrival
from bridge.schedule.runtime import recent_messages
from bridge.storage.protocol import Database
from tests.masking import m
from tests.schedule.database import database_of
from tests.waits import HANG_S

OPENED: list[ChatSettings] = []


async def inbox_over(path: Path, database: Database, chat: str = "terminal") -> TerminalInbox:
    """A `roost chat`'s inbox (as `bridge.cli.daemon.terminal_inbox`); the marks of every
    earlier one written (their roost closed: `ChatSettings.flush`)."""
    while OPENED:
        await OPENED.pop().flush()
    seen = ChatSettings(database)
    await seen.load()
    OPENED.append(seen)
    return TerminalInbox(
        lambda after: recent_messages(database, "local", "cli", chat, after),
        lambda: seen.get("local", "cli", chat, SEEN_KEY),
        lambda value: seen.set_soon("local", "cli", chat, SEEN_KEY, value),
        interval_s=0,
    )


async def test_new_messages_show_once_each_and_across_restarts(tmp_path: Path) -> None:
    db = tmp_path / "roost.db"
    async with database_of(db) as database:
        first = await inbox_over(db, database)
        await shown_once_each(db, first, OutboxStore(database))


async def shown_once_each(db: Path, first: TerminalInbox, store: OutboxStore) -> None:
    await store.enqueue("local", "cli", "terminal", m("⏰ set by send"), "job:a:1", now_ms=1)
    await store.enqueue("local", "cli", "elsewhere", m("⏰ another chat's"), "job:f:1", now_ms=1)
    assert await first.missed() == ["⏰ set by send"]  # a chat never opened: all it waits for
    shown: list[str] = []
    arrived = asyncio.Event()

    async def show(text: str) -> None:
        shown.append(text)
        arrived.set()

    watcher = asyncio.create_task(first.watch(show))
    await store.enqueue("local", "cli", "terminal", m("⏰ pills"), "job:b:1", now_ms=2)
    await store.enqueue("local", "cli", "other", m("⏰ not this chat"), "job:c:1", now_ms=2)
    await store.enqueue("bob", "cli", "terminal", m("⏰ not this tenant"), "job:d:1", now_ms=2)
    await asyncio.wait_for(arrived.wait(), HANG_S)
    watcher.cancel()
    assert shown == ["⏰ pills"]
    await store.enqueue("local", "cli", "terminal", m("⏰ basil"), "job:e:1", now_ms=3)
    second = await inbox_over(db, store.db)  # the next `roost chat`
    assert await second.missed() == ["⏰ basil"]
    third = await inbox_over(db, store.db)
    assert await third.missed() == []
    while OPENED:  # before the database closes
        await OPENED.pop().flush()


def test_held_tells_a_running_daemon(tmp_path: Path) -> None:
    assert held(tmp_path) is False  # no lock file yet
    lock = hold(tmp_path)
    try:
        assert held(tmp_path) is True
    finally:
        lock.release()
    assert held(tmp_path) is False  # the file stays, the lock is gone


def test_arrival_notes_only_for_the_terminal() -> None:
    assert arrival("web", "c1", None) == arrival("telegram", "42", False) == ""
    assert "`roost chat`" in arrival("cli", "terminal", True)
    assert "`roost chat --chat send`" in arrival("cli", "send", None)
    assert "not running" in arrival("cli", "terminal", False)
    assert "not running" not in arrival("cli", "terminal", None)
