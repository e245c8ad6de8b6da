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


@pytest.fixture
async def pg_url(pg_server: PgServer) -> AsyncIterator[str]:
    """An empty database on the session's server, for this test alone: new, or one an
    earlier test used and that was emptied since (nothing of it is left, see `_empty`)."""
    admin = await asyncpg.connect(pg_server.url())
    try:
        spare = _emptied.setdefault(pg_server.port, [])
        if spare:
            name = spare.pop()
        else:
            name = f"t{os.getpid()}_{next(_names)}"
            await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    yield pg_server.url(name)
    if await _empty(pg_server, name):
        _emptied.setdefault(pg_server.port, []).append(name)
        return
    admin = await asyncpg.connect(pg_server.url())
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


async def _empty(pg_server: PgServer, name: str) -> bool:
    """Make a used test database as a new one is: no session left on it, no schema but
    an empty `public`, no object in it. False (the caller drops it) when that fails."""
    try:
        admin = await asyncpg.connect(pg_server.url())
        try:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = $1 AND pid <> pg_backend_pid()",
                name,
            )
        finally:
            await admin.close()
        conn = await asyncpg.connect(pg_server.url(name))
        try:
            await conn.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
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


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def location(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The SQLite file's path or the PostgreSQL URL of this test's database."""
    if backend == "sqlite":
        return str(tmp_path / "roost.db")
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
async def open_db(backend: str, location: str) -> AsyncIterator[OpenDb]:
    """open_db(migrate=True, **options): a Database on this test's database; closed after."""
    opened: list[Database] = []

    async def open_(migrate: bool = True, **options: Any) -> Any:
        db: Any
        if backend == "sqlite":
            db = await SqliteDatabase.open(Path(location), **options)
        else:
            db = await PostgresDatabase.open(location, **options)
        opened.append(db)
        if migrate:
            await db.migrate(MIGRATIONS)
        return db

    yield open_
    for db in reversed(opened):
        await db.aclose()


@pytest.fixture
async def db(open_db: OpenDb) -> Any:
    """A migrated database of this test's backend (the full roost schema)."""
    return await open_db()
