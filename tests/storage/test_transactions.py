"""Transactions: commit, rollback on an exception, savepoints, isolation, claims (conformance)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.storage.conftest import OpenDb


async def _table(db: Any) -> None:
    await db.execute(
        f"CREATE TABLE work (id {db.dialect.identity_pk}, owner TEXT NOT NULL DEFAULT '', "
        "n BIGINT NOT NULL DEFAULT 0)"
    )


async def test_a_block_commits_and_an_exception_rolls_it_back(db: Any) -> None:
    await _table(db)
    async with db.transaction():
        await db.execute("INSERT INTO work (n) VALUES (1)")
        await db.execute("INSERT INTO work (n) VALUES (2)")
    with pytest.raises(ValueError):
        async with db.transaction():
            await db.execute("INSERT INTO work (n) VALUES (3)")
            raise ValueError("boom")
    assert await db.fetch_all("SELECT n FROM work ORDER BY n") == [(1,), (2,)]


async def test_a_nested_block_is_a_savepoint(db: Any) -> None:
    await _table(db)
    async with db.transaction():
        await db.execute("INSERT INTO work (n) VALUES (1)")
        with pytest.raises(KeyError):
            async with db.transaction():
                await db.execute("INSERT INTO work (n) VALUES (2)")
                raise KeyError("inner")
        async with db.transaction():
            await db.execute("INSERT INTO work (n) VALUES (3)")
    assert await db.fetch_all("SELECT n FROM work ORDER BY n") == [(1,), (3,)]


async def test_a_failed_statement_inside_rolls_back_the_block(db: Any) -> None:
    await _table(db)
    with pytest.raises(Exception, match="no_such"):
        async with db.transaction():
            await db.execute("INSERT INTO work (n) VALUES (1)")
            await db.execute("INSERT INTO no_such (n) VALUES (1)")
    assert await db.fetch_value("SELECT count(*) FROM work") == 0


async def test_uncommitted_rows_are_invisible_to_another_connection(open_db: OpenDb) -> None:
    one = await open_db()
    await _table(one)
    two = await open_db(migrate=False)
    inside, release = asyncio.Event(), asyncio.Event()

    async def writer() -> None:
        async with one.transaction():
            await one.execute("INSERT INTO work (n) VALUES (7)")
            inside.set()
            await release.wait()

    task = asyncio.create_task(writer())
    await inside.wait()
    assert await two.fetch_value("SELECT count(*) FROM work") == 0
    release.set()
    await task
    assert await two.fetch_value("SELECT count(*) FROM work") == 1


async def test_other_tasks_statements_stay_out_of_a_block(db: Any) -> None:
    """A block belongs to its task: another task's statement is not part of it (it waits
    on SQLite's one writer, runs on its own connection on PostgreSQL), so the block's
    rollback does not undo it."""
    await _table(db)
    inside, release = asyncio.Event(), asyncio.Event()

    async def rolled_back() -> None:
        with pytest.raises(RuntimeError):
            async with db.transaction():
                await db.execute("INSERT INTO work (n) VALUES (1)")
                inside.set()
                await release.wait()
                raise RuntimeError

    task = asyncio.create_task(rolled_back())
    await inside.wait()
    other = asyncio.create_task(db.execute("INSERT INTO work (n) VALUES (2)"))
    await asyncio.sleep(0)
    release.set()
    await task
    await other
    assert await db.fetch_all("SELECT n FROM work") == [(2,)]


async def test_a_cancelled_block_rolls_back_and_leaves_the_database_usable(db: Any) -> None:
    await _table(db)
    inside = asyncio.Event()

    async def stuck() -> None:
        async with db.transaction():
            await db.execute("INSERT INTO work (n) VALUES (1)")
            inside.set()
            await asyncio.Event().wait()

    task = asyncio.create_task(stuck())
    await inside.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    async with db.transaction():
        await db.execute("INSERT INTO work (n) VALUES (2)")
    assert await db.fetch_all("SELECT n FROM work") == [(2,)]


async def test_two_claimers_never_get_the_same_row(open_db: OpenDb) -> None:
    """The claim pattern (dialect.skip_locked) from two connections at once: every row is
    claimed exactly once."""
    one = await open_db()
    await _table(one)
    two = await open_db(migrate=False)
    await one.execute_many("INSERT INTO work (n) VALUES (?)", [(i,) for i in range(60)])
    claim = (
        "UPDATE work SET owner = :me WHERE id IN (SELECT id FROM work WHERE owner = '' "
        f"ORDER BY id LIMIT 1 {one.dialect.skip_locked}) RETURNING id"
    )

    async def claimer(db: Any, me: str) -> list[int]:
        got: list[int] = []
        while True:
            async with db.transaction():
                row = await db.fetch_one(claim, {"me": me})
                if row is None:
                    return got
                await db.execute("UPDATE work SET n = n + 1000 WHERE id = ?", (row[0],))
            got.append(int(row[0]))

    results = await asyncio.gather(*(claimer(d, f"c{i}") for i, d in enumerate([one, two] * 2)))
    claimed = [r for got in results for r in got]
    assert sorted(claimed) == sorted(r[0] for r in await one.fetch_all("SELECT id FROM work"))
    assert len(claimed) == len(set(claimed)) == 60
    assert await one.fetch_value("SELECT count(*) FROM work WHERE n < 1000") == 0
