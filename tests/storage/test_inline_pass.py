"""Units that reach SQLite's idle writer in one pass of the loop commit as one inline job.

The first unit given to `atomic` (a turn's end) runs inline at once, as ever;
the units other tasks give after it in the same pass of the event loop (turns
that end together) join into ONE inline transaction at the pass's end: one BEGIN, one
COMMIT, each caller told its own result only after that commit. When the
joined units fail (a statement, a unit's own Python), nothing of them stays
and each runs again alone: the failure reaches only its caller. A caller
cancelled after it joined finds its unit stored, as on the writer's thread.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from bridge.storage.errors import IntegrityError
from bridge.storage.sqlite import SqliteDatabase
from bridge.storage.units import Unit, execute, fetch_one
from tests.waits import HANG_S


def added(n: int, then: str = "") -> Unit[int]:
    """Row `n` stored; with `then`, that statement after it; the row's square back."""
    yield execute("INSERT INTO t (n) VALUES (?)", (n,))
    if then:
        yield execute(then)
    row = yield fetch_one("SELECT n * n FROM t WHERE n = ?", (n,))
    return int(row[0])


def refused(n: int) -> Unit[None]:
    """Row `n` stored, then the unit's own Python fails."""
    yield execute("INSERT INTO t (n) VALUES (?)", (n,))
    raise ValueError("the unit's own error")


@pytest.fixture
async def traced_db(tmp_path: Path) -> Any:
    statements: list[str] = []

    def trace(conn: sqlite3.Connection) -> None:
        conn.set_trace_callback(statements.append)

    db = await SqliteDatabase.open(tmp_path / "roost.db", readers=1, on_connect=trace)
    await db.execute("CREATE TABLE t (n INTEGER PRIMARY KEY)")
    statements.clear()
    yield db, statements
    await db.aclose()


def count(statements: list[str], statement: str) -> int:
    return sum(s.strip().upper() == statement for s in statements)


async def in_one_pass(*calls: Callable[[], Any]) -> list[Any]:
    """Each call's coroutine as a task, all made at once: their first steps run in one
    pass of the loop, in order."""
    tasks = [asyncio.ensure_future(call()) for call in calls]
    got = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), HANG_S)
    return list(got)


async def stored(db: SqliteDatabase) -> list[int]:
    return [int(r[0]) for r in await db.fetch_all("SELECT n FROM t ORDER BY n")]


async def test_units_ending_in_one_pass_are_two_commits_each_caller_told_after_its_own(
    traced_db: tuple[SqliteDatabase, list[str]], tmp_path: Path
) -> None:
    db, statements = traced_db
    writer = db._writer
    queued, inlined = writer._queued, writer.inlined_writes
    other = sqlite3.connect(tmp_path / "roost.db")  # another process, as it were
    seen: dict[int, tuple[int, ...]] = {}

    async def one(n: int) -> int:
        value: int = await db.atomic(partial(added, n))
        seen[n] = tuple(int(r[0]) for r in other.execute("SELECT n FROM t ORDER BY n"))
        return value

    got = await in_one_pass(*(partial(one, n) for n in (2, 3, 4, 5)))
    assert got == [4, 9, 16, 25]  # each caller its own unit's result
    # the first at once, the three that came after it in that pass as one transaction
    assert (count(statements, "BEGIN IMMEDIATE"), count(statements, "COMMIT")) == (2, 2)
    assert (db.joined, writer.inlined_writes - inlined, writer._queued - queued) == (2, 2, 0)
    assert seen[2] == (2,)
    assert seen[3] == seen[4] == seen[5] == (2, 3, 4, 5)  # told once all of it committed
    other.close()


async def test_a_unit_alone_in_its_pass_runs_inline_at_once(
    traced_db: tuple[SqliteDatabase, list[str]],
) -> None:
    db, statements = traced_db
    for n in (1, 2, 3):
        assert await db.atomic(partial(added, n)) == n * n
        await asyncio.sleep(0)  # the next pass of the loop
    assert (count(statements, "BEGIN IMMEDIATE"), count(statements, "COMMIT")) == (3, 3)
    assert getattr(db, "joined", 0) == 0 and await stored(db) == [1, 2, 3]


async def test_one_task_s_units_back_to_back_each_run_inline_at_once(
    traced_db: tuple[SqliteDatabase, list[str]],
) -> None:
    """A task's next unit in the same pass waits for nothing: no other task's to join."""
    db, statements = traced_db
    for n in (1, 2, 3):
        call = db.atomic(partial(added, n))
        with pytest.raises(StopIteration) as done:
            call.send(None)  # never suspended: it did not wait for the pass's end
        assert done.value.value == n * n
    assert (count(statements, "BEGIN IMMEDIATE"), count(statements, "COMMIT")) == (3, 3)
    assert await stored(db) == [1, 2, 3]


async def test_a_unit_that_fails_in_a_pass_fails_only_its_caller(
    traced_db: tuple[SqliteDatabase, list[str]],
) -> None:
    db, statements = traced_db
    got = await in_one_pass(
        partial(db.atomic, partial(added, 1)),
        partial(db.atomic, partial(added, 2)),
        partial(db.atomic, partial(added, 3, then="INSERT INTO t (n) VALUES (1)")),  # taken
        partial(db.atomic, partial(refused, 4)),
        partial(db.atomic, partial(added, 5)),
    )
    assert got[:2] == [1, 4] and got[4] == 25
    assert isinstance(got[2], IntegrityError)
    assert isinstance(got[3], ValueError)
    assert await stored(db) == [1, 2, 5]  # none of the failed units' rows
    assert getattr(db, "joined", 0) == 0  # the joined transaction was rolled back: each ran alone
    assert count(statements, "ROLLBACK") >= 3  # the joined one, then each failing one


async def test_a_lone_joined_unit_that_fails_gets_its_own_error_made_once(
    traced_db: tuple[SqliteDatabase, list[str]],
) -> None:
    db, _ = traced_db
    made: list[int] = []

    def failing() -> Unit[int]:
        made.append(1)
        return added(1)  # row 1 is taken by the first unit

    got = await in_one_pass(partial(db.atomic, partial(added, 1)), partial(db.atomic, failing))
    assert got[0] == 1 and isinstance(got[1], IntegrityError)
    assert made == [1]
    assert await stored(db) == [1]


async def test_a_caller_cancelled_after_it_joined_finds_its_unit_stored(
    traced_db: tuple[SqliteDatabase, list[str]],
) -> None:
    db, _ = traced_db
    tasks: list[asyncio.Future[Any]] = []

    async def cancel_the_second() -> None:
        tasks[1].cancel()

    tasks += [
        asyncio.ensure_future(db.atomic(partial(added, 1))),
        asyncio.ensure_future(db.atomic(partial(added, 2))),
        asyncio.ensure_future(cancel_the_second()),
        asyncio.ensure_future(db.atomic(partial(added, 3))),
    ]
    got = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), HANG_S)
    assert got[0] == 1 and got[3] == 9
    assert isinstance(got[1], asyncio.CancelledError)
    assert await stored(db) == [1, 2, 3]
    assert db.joined == 1
