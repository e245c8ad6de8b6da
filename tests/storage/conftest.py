"""Fixtures: a real PostgreSQL server for the session, a database per test, both backends.

`backend` runs a test once on SQLite and once on PostgreSQL; `open_db()`
opens a `Database` on that test's database (call it twice for two
connections to one database). PostgreSQL is skipped with a message when it
cannot be installed here, unless ROOST_REQUIRE_POSTGRES=1 (CI), which
fails instead.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from bridge.storage.postgres import PostgresDatabase
from bridge.storage.protocol import Database
from bridge.storage.schema import MIGRATIONS
from bridge.storage.sqlite import SqliteDatabase
from tests.storage.pg_server import NoPostgres, PgServer, start_server

_names = itertools.count()
OpenDb = Callable[..., Awaitable[Any]]


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    try:
        server = start_server()
    except NoPostgres as exc:
        if os.environ.get("ROOST_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"PostgreSQL is required (ROOST_REQUIRE_POSTGRES=1): {exc}")
        pytest.skip(f"PostgreSQL not installed ({exc}); `make test` as root installs it")
    try:
        yield server
    finally:
        server.remove()


# Empty databases of this process, ready for its next test: emptying one (its public
# schema dropped and made again, about 25 ms) costs a fifth of making a new one. By
# server (its port): tests/cluster re-exports these fixtures and gets a server of its own.
_emptied: dict[int, list[str]] = {}
# Migrated databases of this process, each as a fresh migration leaves one (`_reset`),
# for `open_db`'s next test: a reset costs about a third of an emptying plus a migration.
_migrated: dict[int, list[str]] = {}
# By server: the `_fingerprint` of the first database this process migrated from empty.
_fresh: dict[int, str] = {}


@pytest.fixture
async def pg_url(pg_server: PgServer) -> AsyncIterator[str]:
    """An empty database on the session's server, for this test alone: new, or one an
    earlier test used and that was emptied since (nothing of it is left, see `_empty`)."""
    name = await _take_empty(pg_server)
    yield pg_server.url(name)
    await _give_back(pg_server, name)


async def _take_empty(pg_server: PgServer) -> str:
    spare = _emptied.setdefault(pg_server.port, [])
    if spare:
        return spare.pop()
    name = f"t{os.getpid()}_{next(_names)}"
    admin = await asyncpg.connect(pg_server.url())
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    return name


async def _give_back(pg_server: PgServer, name: str) -> None:
    """Empty a used database into the spares, or drop it when that fails."""
    if await _empty(pg_server, name):
        _emptied.setdefault(pg_server.port, []).append(name)
        return
    admin = await asyncpg.connect(pg_server.url())
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


async def _end_sessions(pg_server: PgServer, name: str) -> None:
    """End every session on database `name` (a test's daemon may have left some)."""
    admin = await asyncpg.connect(pg_server.url())
    try:
        await admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = $1 AND pid <> pg_backend_pid()",
            name,
        )
    finally:
        await admin.close()


async def _drop_public(url: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    finally:
        await conn.close()


async def _empty(pg_server: PgServer, name: str) -> bool:
    """Make a used test database as a new one is: no session left on it, no schema but
    an empty `public`, no object in it. False (the caller drops it) when that fails."""
    try:
        await _end_sessions(pg_server, name)
        await _drop_public(pg_server.url(name))
        conn = await asyncpg.connect(pg_server.url(name))
        try:
            left = await conn.fetchval(
                "SELECT (SELECT count(*) FROM pg_namespace WHERE nspname <> 'public' "
                "AND nspname <> 'information_schema' AND nspname NOT LIKE 'pg\\_%') "
                "+ (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = 'public') "
                "+ (SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                "WHERE n.nspname = 'public') "
                "+ (SELECT count(*) FROM pg_extension WHERE extname <> 'plpgsql')"
            )
        finally:
            await conn.close()
    except (OSError, asyncpg.PostgresError):
        return False
    return left == 0


# Everything of a database's schema a test could change, as text: its schemas,
# extensions, relations (tables, indexes, sequences, views) with their columns, indexes,
# constraints, triggers and functions, and the rows of `storage_schema` (its version).
_FINGERPRINT = """
SELECT md5(string_agg(x, E'\\n' ORDER BY x)) FROM (
  SELECT 'ns ' || nspname AS x FROM pg_namespace
  UNION ALL SELECT 'ext ' || extname || ' ' || extversion FROM pg_extension
  UNION ALL SELECT 'rel ' || n.nspname || '.' || c.relname || ' ' || c.relkind::text
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
  UNION ALL SELECT 'col ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid,
      a.atttypmod) || ' ' || a.attnotnull || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
      || ' ' || a.attidentity::text
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE n.nspname = 'public' AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL SELECT 'idx ' || pg_get_indexdef(i.indexrelid) FROM pg_index i
    JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public'
  UNION ALL SELECT 'con ' || conrelid::regclass || ' ' || conname || ' '
      || pg_get_constraintdef(oid) FROM pg_constraint WHERE connamespace = 'public'::regnamespace
  UNION ALL SELECT 'trg ' || pg_get_triggerdef(t.oid) FROM pg_trigger t
    JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = 'public'::regnamespace
  UNION ALL SELECT 'fn ' || p.oid::regprocedure || ' ' || md5(p.prosrc) FROM pg_proc p
    WHERE p.pronamespace = 'public'::regnamespace
  UNION ALL SELECT 'ver ' || version || ' ' || what FROM storage_schema
) AS parts
"""


async def _fingerprint(url: str) -> str:
    conn = await asyncpg.connect(url)
    try:
        return str(await conn.fetchval(_FINGERPRINT))
    finally:
        await conn.close()


async def _reset(pg_server: PgServer, name: str) -> bool:
    """Make a used migrated database as a fresh migration leaves one: no session on it,
    no row in any table but `storage_schema`, every sequence restarted, and the schema's
    fingerprint that of the first fresh migration. False (the caller empties it) when the
    test changed the schema or anything fails. The rows go by DELETE: TRUNCATE gives each
    of the 38 tables, their indexes and TOAST tables new files, about 40 ms of the
    server's CPU per test against 9 (tests/storage/pg_server.py keeps no data that could
    tell the two apart: no test reads a table's size, its pages or its statistics)."""
    fresh = _fresh.get(pg_server.port)
    if fresh is None:
        return False
    try:
        await _end_sessions(pg_server, name)
        conn = await asyncpg.connect(pg_server.url(name))
        try:
            if await conn.fetchval(_FINGERPRINT) != fresh:
                return False
            assert await conn.fetchval("SELECT max(version) FROM storage_schema") == (
                MIGRATIONS[-1].version
            )
            emptying = await conn.fetch(
                "SELECT format('DELETE FROM %I', tablename) FROM pg_tables "
                "WHERE schemaname = 'public' AND tablename <> 'storage_schema' UNION ALL "
                "SELECT format('ALTER SEQUENCE %I.%I RESTART', schemaname, sequencename) "
                "FROM pg_sequences WHERE schemaname = 'public'"
            )
            await conn.execute("; ".join(str(row[0]) for row in emptying))  # one transaction
        finally:
            await conn.close()
    except (OSError, asyncpg.PostgresError):
        return False
    return True


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@dataclass
class _PgTestDb:
    """This test's PostgreSQL database and what is in it: "migrated" (the full schema,
    no row but `storage_schema`'s) or "empty" (a new database's)."""

    server: PgServer
    name: str
    state: str

    @property
    def url(self) -> str:
        return self.server.url(self.name)


@pytest.fixture
async def _pg_test_db(pg_server: PgServer) -> AsyncIterator[_PgTestDb]:
    """A migrated database an earlier test of this process used and `_reset` made as a
    freshly migrated one again, else an empty one (`pg_url`'s); `open_db` empties the
    former when the test's first open does not migrate, and at the end a migrated one goes
    back to the migrated spares (when `_reset` can prove it fresh), any other is emptied."""
    server = pg_server
    spare = _migrated.setdefault(server.port, [])
    if spare:
        test_db = _PgTestDb(server, spare.pop(), "migrated")
    else:
        test_db = _PgTestDb(server, await _take_empty(server), "empty")
    yield test_db
    if test_db.state == "migrated" and await _reset(server, test_db.name):
        _migrated[server.port].append(test_db.name)
        return
    await _give_back(server, test_db.name)


@pytest.fixture
def location(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The SQLite file's path or the PostgreSQL URL of this test's database. On PostgreSQL
    it may hold the migrated schema until `open_db`'s first open decides (a test that needs
    an empty database without `open_db` takes `pg_url`)."""
    if backend == "sqlite":
        return str(tmp_path / "roost.db")
    test_db: _PgTestDb = request.getfixturevalue("_pg_test_db")
    return test_db.url


@pytest.fixture
async def open_db(
    backend: str, location: str, request: pytest.FixtureRequest
) -> AsyncIterator[OpenDb]:
    """open_db(migrate=True, **options): a Database on this test's database; closed after.
    On PostgreSQL the first open decides: migrate=True may get a migrated database (no
    migration run), migrate=False always gets an empty one."""
    opened: list[Database] = []
    test_db: _PgTestDb | None = None
    if backend == "postgresql":
        test_db = request.getfixturevalue("_pg_test_db")

    async def open_(migrate: bool = True, **options: Any) -> Any:
        db: Any
        if test_db is None:
            db = await SqliteDatabase.open(Path(location), **options)
        else:
            if not opened and not migrate and test_db.state == "migrated":
                await _drop_public(test_db.url)
                test_db.state = "empty"
            db = await PostgresDatabase.open(location, **options)
        opened.append(db)
        if migrate and (test_db is None or test_db.state != "migrated" or len(opened) > 1):
            fresh = test_db is not None and test_db.state == "empty" and len(opened) == 1
            await db.migrate(MIGRATIONS)
            if test_db is not None:
                test_db.state = "migrated"
            if fresh and test_db is not None and test_db.server.port not in _fresh:
                _fresh[test_db.server.port] = await _fingerprint(test_db.url)
        return db

    yield open_
    for db in reversed(opened):
        await db.aclose()


@pytest.fixture
async def db(open_db: OpenDb) -> Any:
    """A migrated database of this test's backend (the full roost schema)."""
    return await open_db()
