"""Units that reach SQLite's idle writer in one pass of the loop commit as one inline job.

The first unit given to `atomic` (a turn's end) runs inline at once, as ever;
the units other tasks give after it in the same pass of the event loop (turns
that end together) join into ONE inline transaction at the pass's end: one BEGIN, one
COMMIT, each caller told its own result only after that commit. When the
joined units fail (a statement, a unit's own Python), nothing of them stays
and each runs again alone: the failure reaches only its caller. A caller
cancelled after it joined finds its unit stored, as on the writer's thread,
whether the joined units committed together or not. Each unit has its own
inline budget in the group, and at most `MAX_UNITS` join one pass.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from bridge.storage.errors import IntegrityError
from bridge.storage.sqlite import SqliteDatabase
from bridge.storage.sqlite.group import MAX_UNITS
from bridge.storage.units import Unit, execute
from tests.storage.test_writer_group import added
from tests.waits import HANG_S


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


def rows_in(path: Path) -> list[int]:
    """Row numbers as another connection finds them in the file."""
    conn = sqlite3.connect(path)
    try:
        return [int(r[0]) for r in conn.execute("SELECT n FROM t ORDER BY n")]
    finally:
        conn.close()


def _spoil_by_a_failing_unit(db: SqliteDatabase) -> Callable[[], Any]:
    return partial(db.atomic, partial(added, 3, then="INSERT INTO t (n) VALUES (1)"))


def _spoil_by_a_busy_writer(db: SqliteDatabase, release: threading.Event) -> Callable[[], Any]:
    return partial(db.write, lambda conn: release.wait(HANG_S))


def _spoil_by_a_transaction(db: SqliteDatabase, release: threading.Event) -> Callable[[], Any]:
    async def transaction() -> None:
        async with db.transaction():
            await db.execute("INSERT INTO t (n) VALUES (7)")

    return transaction


@pytest.mark.parametrize("spoiler", ["failing unit", "busy writer", "transaction"])
async def test_a_cancelled_caller_s_unit_is_stored_when_its_pass_does_not_commit_together(
    traced_db: tuple[SqliteDatabase, list[str]], tmp_path: Path, spoiler: str
) -> None:
    """atk2 s43 #1: when the joined units could not commit together (another one failed,
    the writer's thread took a job in that pass, a transaction opened), each was handed
    back to its caller to run alone, so a caller cancelled meanwhile (a Stop, a shutdown)
    dropped its unit silently. It is queued on the writer's thread, as a queued job runs
    to its end whoever awaits it."""
    db, _ = traced_db
    release = threading.Event()
    spoil = {
        "failing unit": lambda: _spoil_by_a_failing_unit(db),
        "busy writer": lambda: _spoil_by_a_busy_writer(db, release),
        "transaction": lambda: _spoil_by_a_transaction(db, release),
    }[spoiler]()
    tasks: list[asyncio.Future[Any]] = []

    async def cancel_the_second() -> None:
        tasks[1].cancel()
        release.set()  # the busy writer's job ends once the pass is over

    tasks += [
        asyncio.ensure_future(db.atomic(partial(added, 1))),
        asyncio.ensure_future(db.atomic(partial(added, 2))),
        asyncio.ensure_future(spoil()),
        asyncio.ensure_future(cancel_the_second()),
    ]
    got = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), HANG_S)
    assert got[0] == 1 and isinstance(got[1], asyncio.CancelledError)
    await db.aclose()  # waits for what was queued for a caller that is gone
    assert 2 in rows_in(tmp_path / "roost.db")
    assert 3 not in rows_in(tmp_path / "roost.db")


async def test_a_long_unit_among_short_ones_runs_on_the_writer_s_thread(tmp_path: Path) -> None:
    """atk2 s43 #2: a group's budget was one unit's times the units in it, so a long unit
    that alone is cut and sent to the writer's thread ran whole on the loop's thread when
    short ones joined it. Each unit has its own budget in the group."""
    threads: list[tuple[int, str]] = []

    def trace(conn: sqlite3.Connection) -> None:
        conn.set_trace_callback(lambda s: threads.append((threading.get_ident(), s)))

    db = await SqliteDatabase.open(tmp_path / "roost.db", readers=1, on_connect=trace)
    await db.execute("CREATE TABLE t (n INTEGER PRIMARY KEY)")
    await db.execute("CREATE TABLE big (k INTEGER PRIMARY KEY)")

    def long_unit() -> Unit[int]:
        yield execute(
            "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 3000) "
            "INSERT INTO big (k) SELECT i FROM c"
        )
        return 3000

    calls = [partial(db.atomic, partial(added, n)) for n in range(10, 40)]
    calls.insert(1, partial(db.atomic, long_unit))
    threads.clear()
    got = await in_one_pass(*calls)
    assert 3000 in got and await stored(db) == list(range(10, 40))
    loop_thread = threading.get_ident()
    finished = [ident for ident, s in threads if s.strip().upper() == "COMMIT"]
    assert any(ident != loop_thread for ident in finished)  # the long one, on the thread
    await db.aclose()


async def test_a_pass_holds_at_most_a_group_s_worth_of_units(
    traced_db: tuple[SqliteDatabase, list[str]],
) -> None:
    """No more than `MAX_UNITS` units join one pass; the rest run as they come."""
    db, statements = traced_db
    got = await in_one_pass(*(partial(db.atomic, partial(added, n)) for n in range(1, 151)))
    assert got == [n * n for n in range(1, 151)]
    assert db.joined <= MAX_UNITS - 1
    assert count(statements, "COMMIT") >= 151 - MAX_UNITS


async def test_a_close_in_the_same_pass_runs_the_joined_units_first(tmp_path: Path) -> None:
    """atk2 s43 #3: with no reader connection, a close in the pass a unit joined stopped the
    writer before the pass's end: the unit was never run and its caller never answered."""
    db = await SqliteDatabase.open(tmp_path / "roost.db", readers=0)
    await db.execute("CREATE TABLE t (n INTEGER PRIMARY KEY)")
    first = asyncio.ensure_future(db.atomic(partial(added, 1)))
    second = asyncio.ensure_future(db.atomic(partial(added, 2)))
    closing = asyncio.ensure_future(db.aclose())
    got = await asyncio.wait_for(asyncio.gather(first, second, closing), HANG_S)
    assert got[:2] == [1, 4]
    assert rows_in(tmp_path / "roost.db") == [1, 2]


async def test_a_joined_maker_that_raises_stopiteration_fails_its_caller(
    traced_db: tuple[SqliteDatabase, list[str]],
) -> None:
    """atk2 s43 #4: a future refuses StopIteration, so the pass's end failed inside its
    callback and the caller was never answered. It gets a RuntimeError, as a coroutine
    raising StopIteration does."""
    db, _ = traced_db

    def maker() -> Unit[int]:
        next(iter(()))  # the maker's own StopIteration
        return added(9)

    got = await in_one_pass(partial(db.atomic, partial(added, 1)), partial(db.atomic, maker))
    assert got[0] == 1 and isinstance(got[1], RuntimeError)
    assert await stored(db) == [1]
