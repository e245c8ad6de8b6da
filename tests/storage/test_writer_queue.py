"""SQLite's writes queue on the writer back to back: a task's job is queued at once,
not when the job before it has ended; a transaction still keeps them out until it ends."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

from bridge.storage.sqlite import SqliteDatabase
from tests.waits import HANG_S, until


async def test_writes_of_other_tasks_are_queued_while_the_writer_is_busy(
    tmp_path: Path,
) -> None:
    db = await SqliteDatabase.open(tmp_path / "roost.db", readers=1)
    try:
        await db.execute("CREATE TABLE t (n INTEGER)")
        writer, gate, running = db._writer, threading.Event(), threading.Event()

        def held(conn: sqlite3.Connection) -> None:
            running.set()
            assert gate.wait(HANG_S)
            conn.execute("INSERT INTO t VALUES (0)")

        first = asyncio.ensure_future(db.write(held))
        await until(running.is_set, "the first job running")
        rest = [asyncio.ensure_future(db.execute("INSERT INTO t VALUES (?)", (i,))) for i in (1, 2)]
        # both queued behind the running job (they used to wait for its end, one by one)
        await until(lambda: writer._queued - writer._ended == 3, "the later jobs queued")
        gate.set()
        await asyncio.wait_for(asyncio.gather(first, *rest), HANG_S)
        assert await db.fetch_all("SELECT n FROM t ORDER BY rowid") == [(0,), (1,), (2,)]
    finally:
        await db.aclose()


async def test_a_write_of_another_task_waits_for_an_open_transaction(tmp_path: Path) -> None:
    db = await SqliteDatabase.open(tmp_path / "roost.db", readers=1)
    try:
        await db.execute("CREATE TABLE t (n INTEGER)")
        inside, release = asyncio.Event(), asyncio.Event()

        async def block() -> None:
            async with db.transaction():
                await db.execute("INSERT INTO t VALUES (1)")
                inside.set()
                await release.wait()
                await db.execute("INSERT INTO t VALUES (2)")

        task = asyncio.ensure_future(block())
        await asyncio.wait_for(inside.wait(), HANG_S)
        other = asyncio.ensure_future(db.write(lambda c: c.execute("INSERT INTO t VALUES (3)")))
        for _ in range(20):
            await asyncio.sleep(0)
        assert db._writer._queued == db._writer._ended  # not queued inside the block
        release.set()
        await asyncio.wait_for(asyncio.gather(task, other), HANG_S)
        assert await db.fetch_all("SELECT n FROM t ORDER BY rowid") == [(1,), (2,), (3,)]
    finally:
        await db.aclose()
