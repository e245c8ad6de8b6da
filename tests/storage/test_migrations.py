"""Migrations: versioned, idempotent, a failed step rolls back whole and re-runs (conformance)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bridge.core import db as core_db
from bridge.storage.errors import MigrationError
from bridge.storage.migrations import Migration
from bridge.storage.schema import MIGRATIONS
from bridge.storage.schema_sqlite import SQLITE
from bridge.storage.sqlite import SqliteDatabase
from tests.storage.conftest import OpenDb


def _step(version: int, sql: str) -> Migration:
    return Migration(version, f"step {version}", sql, sql)


ONE = _step(1, "CREATE TABLE a (tenant TEXT NOT NULL, x BIGINT)")
TWO_BROKEN = _step(2, "CREATE TABLE b (y BIGINT); INSERT INTO a VALUES ('t', 1); NOT SQL AT ALL")
TWO = _step(2, "CREATE TABLE b (y BIGINT); INSERT INTO a VALUES ('t', 1)")


async def test_the_full_list_runs_once_and_again_does_nothing(db: Any) -> None:
    assert await db.version() == len(MIGRATIONS)
    before = await db.tables()
    assert await db.migrate(MIGRATIONS) == len(MIGRATIONS)
    assert await db.tables() == before
    assert "token_usage" in before and "tenant" in before["token_usage"]


async def test_a_failed_step_rolls_back_whole_and_the_fixed_list_continues(
    open_db: OpenDb,
) -> None:
    db = await open_db(migrate=False)
    assert await db.migrate([ONE]) == 1
    with pytest.raises(Exception):  # noqa: B017 - the backend's syntax error, converted
        await db.migrate([ONE, TWO_BROKEN])
    assert await db.version() == 1
    assert "b" not in await db.tables()
    assert await db.fetch_value("SELECT count(*) FROM a") == 0
    assert await db.migrate([ONE, TWO]) == 2
    assert await db.fetch_value("SELECT count(*) FROM a") == 1
    assert await db.migrate([ONE, TWO]) == 2
    assert await db.fetch_value("SELECT count(*) FROM a") == 1


async def test_two_connections_migrating_at_once_run_each_step_once(open_db: OpenDb) -> None:
    import asyncio

    one, two = await open_db(migrate=False), await open_db(migrate=False)
    got = await asyncio.gather(one.migrate([ONE, TWO]), two.migrate([ONE, TWO]))
    assert got == [2, 2]
    assert await one.fetch_value("SELECT count(*) FROM a") == 1


async def test_a_database_newer_than_the_list_is_refused(open_db: OpenDb) -> None:
    db = await open_db(migrate=False)
    await db.migrate([ONE, TWO])
    with pytest.raises(MigrationError, match="newer"):
        await db.migrate([ONE])


async def test_a_list_with_a_gap_is_refused(open_db: OpenDb) -> None:
    db = await open_db(migrate=False)
    with pytest.raises(MigrationError, match="version 3"):
        await db.migrate([ONE, _step(3, "CREATE TABLE c (z BIGINT)")])


def test_the_sqlite_texts_are_today_s_core_list_verbatim() -> None:
    assert tuple(core_db.MIGRATIONS[: len(SQLITE)]) == tuple(SQLITE)
    assert [m.version for m in MIGRATIONS] == list(range(1, len(SQLITE) + 1))


async def test_a_roost_db_migrated_by_core_db_is_at_its_step_and_keeps_its_rows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "roost.db"
    conn = core_db.connect(path)  # today's store opener: migrates to its whole list
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    conn.execute("INSERT INTO chat_settings VALUES ('t', 'telegram', 'c', 'k', 'v')")
    conn.close()
    db = await SqliteDatabase.open(path)
    try:
        assert await db.version() == version
        if version == len(MIGRATIONS):
            assert await db.migrate(MIGRATIONS) == version
        else:  # core's list grew after this one was copied: the copy must catch up first
            with pytest.raises(MigrationError, match="newer"):
                await db.migrate(MIGRATIONS)
        assert await db.fetch_all("SELECT key, value FROM chat_settings") == [("k", "v")]
    finally:
        await db.aclose()
