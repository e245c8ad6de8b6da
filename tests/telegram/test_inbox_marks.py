"""The durable inbox's done marks (`bridge.channels.common.inbox_marks`): a lone mark is
written by its caller (no task), and a mark whose caller is cancelled is written all the
same, also when it was cancelled while the write was under way."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bridge.app.database import open_database
from bridge.channels.telegram.inbox import UpdateInbox
from bridge.storage.protocol import Database


def update(update_id: int) -> dict[str, Any]:
    return {
        "update_id": update_id,
        "message": {
            "message_id": 500 + update_id,
            "date": 1_700_000_000,
            "chat": {"id": 111, "type": "private"},
            "from": {"id": 111, "is_bot": False, "first_name": "a"},
            "text": f"q{update_id}",
        },
    }


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await open_database(tmp_path / "roost.db")
    try:
        yield database
    finally:
        await database.aclose()


async def states(db: Database) -> dict[int, str]:
    got = await db.fetch_all("SELECT update_id, state FROM channel_inbox")
    return {int(u): str(s) for u, s in got}


async def test_a_lone_mark_is_written_by_its_caller_without_a_task(db: Database) -> None:
    box = UpdateInbox(db, "telegram:1", "me")
    await box.store([update(1)])
    made: list[str] = []

    def factory(lp: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Task[Any]:
        made.append(coro.__qualname__)
        return asyncio.Task(coro, loop=lp, **kw)

    loop = asyncio.get_running_loop()
    loop.set_task_factory(factory)  # type: ignore[arg-type]
    try:
        await box.done(1)
    finally:
        loop.set_task_factory(None)
    assert made == []
    assert await states(db) == {1: "done"}


async def test_a_cancelled_callers_mark_is_written_all_the_same(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelled while its write waits (the database busy), and one asked for meanwhile:
    both are committed; the next mark is written as usual."""
    box = UpdateInbox(db, "telegram:1", "me")
    await box.store([update(n) for n in (1, 2, 3)])
    real, busy, entered = db.execute, asyncio.Event(), asyncio.Event()

    async def slow(sql: str, params: Any = None) -> int:
        entered.set()
        await busy.wait()
        return await real(sql, params)

    monkeypatch.setattr(db, "execute", slow)
    first = asyncio.create_task(box.done(1))
    await entered.wait()  # its write is under way
    second = asyncio.create_task(box.done(2))
    await asyncio.sleep(0)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    busy.set()
    await asyncio.wait_for(second, 60)  # a hang guard
    monkeypatch.setattr(db, "execute", real)
    await box.done(3)
    assert await states(db) == {1: "done", 2: "done", 3: "done"}


async def test_a_mark_cancelled_before_its_write_began_is_written(db: Database) -> None:
    box = UpdateInbox(db, "telegram:1", "me")
    await box.store([update(1), update(2)])
    first = asyncio.create_task(box.done(1))
    await asyncio.sleep(0)  # it yields once for the moment's other marks
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    await box.done(2)  # queued behind the cancelled one, in the task that writes both
    assert await states(db) == {1: "done", 2: "done"}
