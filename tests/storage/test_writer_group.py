"""Units queued on SQLite's busy writer commit together (`bridge.storage.sqlite.group`).

Units that wait behind a busy writer are one transaction: one BEGIN and one
COMMIT for all, each caller told its own result only after the commit; when a
unit fails (a statement, its own Python, its deferred constraint at COMMIT,
or by ending the whole transaction) the group runs again unit by unit, so the
failure reaches only its caller and every other unit is stored; a caller told
its unit is stored finds it after the process dies without closing the
database.
"""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from bridge.storage.errors import IntegrityError, StorageError
from bridge.storage.sqlite import SqliteDatabase
from bridge.storage.units import Unit, execute, fetch_one
from tests.waits import HANG_S, until


def added(n: int, then: str = "") -> Unit[int]:
    """Row `n` stored; with `then`, that statement after it; the row's square back."""
    yield execute("INSERT INTO t (n) VALUES (?)", (n,))
    if then:
        yield execute(then)
    row = yield fetch_one("SELECT n * n FROM t WHERE n = ?", (n,))
    return int(row[0])


def ended() -> Unit[None]:
    """A unit that ends the whole transaction it is in, then fails."""
    yield execute("INSERT INTO t (n) VALUES (2)")
    yield execute("ROLLBACK")
    yield execute("INSERT INTO missing (n) VALUES (2)")


def refused(n: int) -> Unit[None]:
    """Row `n` stored, then the unit's own Python fails."""
    yield execute("INSERT INTO t (n) VALUES (?)", (n,))
    raise ValueError("the unit's own error")


class Busy:
    """The writer's thread held by a job until `free()`; its statements traced."""

    def __init__(self, db: SqliteDatabase) -> None:
        self.db, self.gate, self.running = db, threading.Event(), threading.Event()
        self.statements: list[str] = []
        self.job: asyncio.Future[None] | None = None

    async def hold(self) -> None:
        await self.db.write(lambda c: c.set_trace_callback(self.statements.append))

        def held(conn: sqlite3.Connection) -> None:
            self.running.set()
            assert self.gate.wait(HANG_S)

        self.job = asyncio.ensure_future(self.db.write(held))
        await until(self.running.is_set, "the writer held")
        self.statements.clear()

    async def queue(self, *makes: Callable[[], Unit[Any]]) -> list[asyncio.Task[Any]]:
        """Each unit given to `atomic` (made by a function: a turn's end), all queued."""
        writer = self.db._writer
        before = writer._queued
        calls = [asyncio.ensure_future(self.db.atomic(make)) for make in makes]
        await until(lambda: writer._queued == before + len(makes), "the units queued")
        return calls

    async def free(self, calls: Sequence[asyncio.Future[Any]]) -> list[Any]:
        self.gate.set()
        assert self.job is not None
        await asyncio.wait_for(self.job, HANG_S)
        got = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), HANG_S)
        return list(got)

    def count(self, statement: str) -> int:
        return sum(s.strip().upper() == statement for s in self.statements)


@pytest.fixture
async def db(tmp_path: Path) -> SqliteDatabase:
    db = await SqliteDatabase.open(tmp_path / "roost.db", readers=1)
    await db.execute("CREATE TABLE t (n INTEGER PRIMARY KEY)")
    await db.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
    await db.execute(
        "CREATE TABLE child (id INTEGER PRIMARY KEY,"
        " pid INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)"
    )
    yield db  # type: ignore[misc]
    await db.aclose()


async def stored(db: SqliteDatabase) -> list[int]:
    return [int(r[0]) for r in await db.fetch_all("SELECT n FROM t ORDER BY n")]


async def test_units_behind_a_busy_writer_are_one_commit_each_caller_told_after_it(
    db: SqliteDatabase, tmp_path: Path
) -> None:
    busy = Busy(db)
    await busy.hold()
    other = sqlite3.connect(tmp_path / "roost.db")  # another process, as it were
    seen: list[tuple[int, ...]] = []

    async def one(n: int) -> int:
        value: int = await db.atomic(partial(added, n))
        seen.append(tuple(int(r[0]) for r in other.execute("SELECT n FROM t ORDER BY n")))
        return value

    calls = [asyncio.ensure_future(one(n)) for n in (2, 3, 4)]
    await until(lambda: db._writer._queued - db._writer._ended == 4, "the units queued")
    assert await busy.free(calls) == [4, 9, 16]  # each caller its own unit's result
    assert (busy.count("BEGIN IMMEDIATE"), busy.count("COMMIT")) == (1, 1)
    assert db._writer.grouped == 2
    assert seen == [(2, 3, 4)] * 3  # told only once all of it was committed
    other.close()


async def test_a_unit_that_fails_fails_only_its_caller(db: SqliteDatabase) -> None:
    busy = Busy(db)
    await busy.hold()
    calls = await busy.queue(
        partial(added, 1),
        partial(added, 2, then="INSERT INTO t (n) VALUES (1)"),  # its second row: taken
        partial(refused, 3),
        partial(added, 4),
    )
    first, second, third, fourth = await busy.free(calls)
    assert (first, fourth) == (1, 16)
    assert isinstance(second, IntegrityError)
    assert isinstance(third, ValueError)
    assert await stored(db) == [1, 4]  # nothing of the failed units: not their first rows
    assert busy.count("BEGIN IMMEDIATE") == 5  # tried together, then each alone


async def test_a_unit_refused_at_commit_fails_alone_and_the_others_are_stored(
    db: SqliteDatabase,
) -> None:
    busy = Busy(db)
    await busy.hold()
    orphan = "INSERT INTO child (id, pid) VALUES (1, 99)"  # a deferred key: refused at COMMIT
    calls = await busy.queue(partial(added, 1), partial(added, 2, then=orphan), partial(added, 3))
    first, second, third = await busy.free(calls)
    assert (first, third) == (1, 9)
    assert isinstance(second, IntegrityError)
    assert await stored(db) == [1, 3]
    assert await db.fetch_all("SELECT id FROM child") == []
    assert busy.count("BEGIN IMMEDIATE") == 4  # tried together, then each alone


async def test_a_unit_that_ends_the_transaction_leaves_the_units_before_it_stored(
    db: SqliteDatabase,
) -> None:
    busy = Busy(db)
    await busy.hold()
    calls = await busy.queue(partial(added, 1), ended, partial(added, 3))
    first, second, third = await busy.free(calls)
    assert (first, third) == (1, 9)
    assert isinstance(second, StorageError)  # no such table
    assert await stored(db) == [1, 3]
    assert busy.count("BEGIN IMMEDIATE") == 4  # tried together, then each alone


def test_a_caller_told_its_unit_is_stored_finds_it_after_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "roost.db"
    script = f"""
import asyncio, os
from functools import partial
from pathlib import Path
from tests.storage.test_writer_group import Busy, added
from bridge.storage.sqlite import SqliteDatabase

async def main():
    db = await SqliteDatabase.open(Path({str(path)!r}), readers=1)
    await db.execute("CREATE TABLE t (n INTEGER PRIMARY KEY)")
    busy = Busy(db)
    await busy.hold()
    calls = await busy.queue(*(partial(added, n) for n in (1, 2, 3)))
    print(await busy.free(calls), db._writer.grouped, flush=True)
    os._exit(0)  # no close, no checkpoint: the rows are in the WAL only

asyncio.run(main())
"""
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        cwd=Path(__file__).parents[2],
    )
    assert done.stdout.strip() == "[1, 4, 9] 2", done.stderr
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT n FROM t ORDER BY n").fetchall() == [(1,), (2,), (3,)]
    conn.close()
