"""`Database.atomic` (`bridge.storage.units`) on both backends: a unit's statements commit
together or not at all, results come back to the generator, units compose, and a unit
inside a transaction belongs to it; on SQLite a unit is one job on the writer."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path

import pytest

from bridge.storage.errors import IntegrityError, StorageError
from bridge.storage.protocol import Database
from bridge.storage.units import Unit, execute, execute_many, fetch_all, fetch_one, together
from tests.storage.conftest import OpenDb
from tests.storage.traced import traced

TABLE = "CREATE TABLE IF NOT EXISTS unit_test (k TEXT PRIMARY KEY, n BIGINT NOT NULL)"


def counted(key: str, by: int) -> Unit[int]:
    row = yield fetch_one(
        "INSERT INTO unit_test (k, n) VALUES (?, ?) ON CONFLICT (k) DO UPDATE"
        " SET n = unit_test.n + excluded.n RETURNING n",
        (key, by),
    )
    return int(row[0])


def several(keys: list[str]) -> Unit[tuple[list[int], int]]:
    totals = []
    for k in keys:
        totals.append((yield from counted(k, 1)))
    yield execute_many(
        "INSERT INTO unit_test (k, n) VALUES (?, ?)", [(f"x{k}", 0) for k in dict.fromkeys(keys)]
    )
    changed = yield execute("UPDATE unit_test SET n = n + 10 WHERE k LIKE 'x%'")
    return totals, changed


def failing(key: str) -> Unit[None]:
    yield from counted(key, 1)
    yield execute("INSERT INTO unit_test (k, n) VALUES (?, 0)", (key,))  # a duplicate key


async def rows(db: Database) -> list[tuple[str, int]]:
    found = await db.fetch_all("SELECT k, n FROM unit_test ORDER BY k")
    return [(str(k), int(n)) for k, n in found]


async def test_a_unit_commits_whole_and_sends_each_result_back(db: Database) -> None:
    await db.execute(TABLE)
    assert await db.atomic(several(["a", "b", "a"])) == ([1, 1, 2], 2)
    assert await rows(db) == [("a", 2), ("b", 1), ("xa", 10), ("xb", 10)]


async def test_a_failing_unit_leaves_nothing(db: Database) -> None:
    await db.execute(TABLE)
    await db.atomic(counted("a", 5))
    with pytest.raises(IntegrityError):
        await db.atomic(failing("a"))
    assert await rows(db) == [("a", 5)]

    def raising() -> Unit[None]:
        yield from counted("a", 1)
        raise ValueError("the unit's own reason")

    with pytest.raises(ValueError, match="own reason"):
        await db.atomic(raising())
    assert await rows(db) == [("a", 5)]


async def test_a_unit_inside_a_transaction_is_part_of_it(db: Database) -> None:
    await db.execute(TABLE)
    with pytest.raises(RuntimeError):
        async with db.transaction():
            assert await db.atomic(counted("a", 1)) == 1
            assert await db.fetch_value("SELECT n FROM unit_test WHERE k = 'a'") == 1
            raise RuntimeError("roll it all back")
    assert await rows(db) == []


async def test_units_of_two_connections_at_once_lose_no_count(
    db: Database, open_db: OpenDb
) -> None:
    await db.execute(TABLE)
    other: Database = await open_db()
    await asyncio.gather(*(d.atomic(counted("a", 1)) for d in [db, other] * 20))
    assert await rows(db) == [("a", 40)]


async def test_sqlite_a_unit_is_one_transaction_on_the_writer(tmp_path: Path) -> None:
    db, statements = await traced(tmp_path / "roost.db")
    try:
        await db.execute(TABLE)
        statements.clear()
        await db.atomic(several(["a"]))
        assert [s.split()[0] for s in statements] == [
            "BEGIN",
            "INSERT",
            "INSERT",
            "UPDATE",
            "COMMIT",
        ]
        assert await db.atomic(fetch_all_unit()) == [("a", 1), ("xa", 10)]
    finally:
        await db.aclose()


def fetch_all_unit() -> Unit[list[tuple[str, int]]]:
    found = yield fetch_all("SELECT k, n FROM unit_test ORDER BY k")
    return [(str(k), int(n)) for k, n in found]


async def test_a_unit_made_by_a_function_runs_on_both_backends(db: Database) -> None:
    await db.execute(TABLE)
    assert await db.atomic(partial(several, ["a", "b"])) == ([1, 1], 2)
    with pytest.raises(IntegrityError):
        await db.atomic(partial(failing, "a"))
    assert await rows(db) == [("a", 1), ("b", 1), ("xa", 10), ("xb", 10)]


async def test_sqlite_a_short_unit_runs_inline_a_long_one_again_on_the_writer(
    tmp_path: Path,
) -> None:
    """Given the function that makes it, a short unit commits on the caller's thread (no
    hop); one past the inline budget is rolled back there and made again for the writer's
    thread: it commits once, whole."""
    db, statements = await traced(tmp_path / "roost.db")
    try:
        await db.execute(TABLE)
        writer = db._writer
        before, made = writer.inlined, []

        def short() -> Unit[int]:
            made.append("short")
            return counted("a", 1)

        assert await db.atomic(short) == 1
        assert (writer.inlined - before, made) == (1, ["short"])

        def long() -> Unit[int]:
            made.append("long")
            yield execute_many(
                "INSERT INTO unit_test (k, n) VALUES (?, ?)", [(f"k{i}", i) for i in range(3000)]
            )
            return (yield from counted("a", 1))

        statements.clear()
        assert await db.atomic(long) == 2
        assert made == ["short", "long", "long"]  # cut short inline, made again
        heads = [s.split()[0] for s in statements if not s.startswith("PRAGMA")]
        assert heads.count("ROLLBACK") == 1 and heads.count("COMMIT") == 1, heads
        assert len(await rows(db)) == 3001
    finally:
        await db.aclose()


async def test_units_made_together_commit_together(db: Database) -> None:
    """`together`: one unit of several, the first's result; one failing leaves none."""
    await db.execute(TABLE)
    both = together(partial(counted, "a", 2), partial(counted, "b", 3))
    assert await db.atomic(both) == 2
    assert await db.atomic(both) == 4  # made again whole
    with pytest.raises(IntegrityError):
        await db.atomic(together(partial(counted, "a", 1), partial(failing, "b")))
    assert await rows(db) == [("a", 4), ("b", 6)]


async def test_a_many_step_with_a_row_of_another_length_is_refused_whole(db: Database) -> None:
    """A `many` step's rows are passed to the driver as they are when the first is a tuple
    of the statement's count: a later row of another length still fails the unit, and
    nothing of it stays."""
    await db.execute("CREATE TABLE many_rows (a INTEGER, b INTEGER)")

    def unit() -> Unit[None]:
        yield execute_many("INSERT INTO many_rows (a, b) VALUES (?, ?)", [(1, 2), (3,)])

    with pytest.raises(StorageError):
        await db.atomic(unit())
    assert await db.fetch_all("SELECT a FROM many_rows") == []
