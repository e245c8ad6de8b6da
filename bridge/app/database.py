"""The `Database` every store runs on (`bridge.storage`), opened by the composition root.

`[database] url` unset (the default): a `SqliteDatabase` on the home's
roost.db (its own writer and reader threads; WAL, `busy_timeout` 10 s on
every connection, so another process on the file, `roost backup` or an
older roost, neither fails with "database is locked" nor misses a write).
The schema is counted in `PRAGMA user_version` over one list of steps
(`bridge.storage.schema`), the one older roosts counted through
`bridge.core.db`'s sqlite3 connection, so a home's existing roost.db opens
as it is; `migrate` here adds only the engine's own `storage_*` tables.

`[database] url = "postgresql://..."`: a `PostgresDatabase` (its password
in the URL or in `password_file`), migrated to the same list; every store
runs on it, nothing of the machine state goes to roost.db (docs/scaling.md).
PostgreSQL unreachable at start
is a `ConfigError` naming `database.url` (exit status 78). There, `roost
serve` holds its `[cluster] instance` name (`claim_cluster`): a second live
instance of the name refuses to start. Only this package names a backend
(import-linter). The PostgreSQL backend (and asyncpg) is imported only when a URL
is configured (`postgres_engine`).
"""

from __future__ import annotations

import os
import secrets
import socket
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from bridge.core.config import ConfigError
from bridge.core.config_sections import ClusterSettings, DatabaseSettings
from bridge.storage import url as db_url
from bridge.storage.errors import DatabaseUnreachable
from bridge.storage.leases import InstanceName, Leases
from bridge.storage.protocol import Database
from bridge.storage.schema import MIGRATIONS
from bridge.storage.sqlite import SqliteDatabase

if TYPE_CHECKING:
    from bridge.storage.postgres import PostgresDatabase

READERS = 1  # reader threads beside the writer: the ported stores read little yet


async def open_database(path: Path, settings: DatabaseSettings | None = None) -> Database:
    """The migrated `Database`: PostgreSQL when `settings.url` is set, else the SQLite
    file `path` (created 0600 when missing)."""
    url = None if settings is None else postgres_url(settings)
    db: Database
    if url is None:
        db = await SqliteDatabase.open(path, readers=READERS)
    else:
        db = await open_postgres(url, settings)
    try:
        await db.migrate(MIGRATIONS)
    except BaseException:
        await db.aclose()
        raise
    return db


async def open_postgres(url: str, settings: DatabaseSettings | None = None) -> Database:
    """A `PostgresDatabase` on `url` (not migrated); ConfigError naming `database.url`
    when the server cannot be reached."""
    options = DatabaseSettings() if settings is None else settings
    try:
        return await postgres_engine().open(
            url, pool_size=options.pool_size, connect_timeout_s=options.connect_timeout_s
        )
    except DatabaseUnreachable as exc:
        raise ConfigError(str(exc)) from None


def postgres_engine() -> type[PostgresDatabase]:
    """The PostgreSQL backend, imported when a URL is configured: asyncpg and the
    backend's modules stay out of every process on a SQLite home."""
    from bridge.storage.postgres import PostgresDatabase

    return PostgresDatabase


def postgres_url(settings: DatabaseSettings) -> str | None:
    """The URL to connect with (the password of `password_file` put in); None: SQLite."""
    if settings.url is None:
        return None
    url = settings.url.get_secret_value()
    if settings.password_file is None:
        return url
    return db_url.with_password(url, read_password(settings.password_file))


def read_password(path: Path) -> str:
    try:
        text = path.read_text().strip()
    except OSError as exc:
        raise ConfigError(
            f"invalid configuration: database.password_file: cannot read {path} "
            f"({exc.strerror or type(exc).__name__})"
        ) from None
    if not text:
        raise ConfigError(f"invalid configuration: database.password_file: {path} is empty")
    return text


def describe(settings: DatabaseSettings, path: Path) -> str:
    """Where the machine state is, for a person: the URL without its password."""
    if settings.url is None:
        return f"SQLite {path}"
    return f"PostgreSQL {db_url.redact(settings.url.get_secret_value())}"


async def claim_cluster(database: Database, cluster: ClusterSettings) -> InstanceName | None:
    """Hold `[cluster] instance` (default: the host name) on a PostgreSQL database while
    this process serves; LeaseHeld when a live instance has the name. None on SQLite:
    there the home's lock is the one-instance rule."""
    if database.dialect.name != "postgresql":
        return None
    host = socket.gethostname()
    token = f"{host}:{os.getpid()}:{secrets.token_hex(6)}"  # this process start
    ttl_ms = int(cluster.lease_s * 1000)
    held = InstanceName(Leases(database), cluster.instance or host, token, ttl_ms)
    await held.start()
    return held


async def postgres_status(
    settings: DatabaseSettings, timeout_s: float
) -> tuple[Literal["ok", "warn", "FAIL"], str]:
    """`roost doctor`'s line for `[database] url`: (ok / warn / FAIL, what it found), the
    URL shown without its password. ConfigError when the password file cannot be read."""
    from bridge.storage.copy import live_instances  # `roost doctor` only, not every start

    url = postgres_url(settings)
    if url is None or settings.url is None:
        return "ok", "not configured (SQLite in the home)"
    shown = db_url.redact(settings.url.get_secret_value())
    wait = min(timeout_s, settings.connect_timeout_s)
    try:
        db = await postgres_engine().open(url, pool_size=1, connect_timeout_s=wait)
    except DatabaseUnreachable as exc:
        return "FAIL", str(exc)
    try:
        version = await db.version()
        serving = await live_instances(db)
    finally:
        await db.aclose()
    live = ", ".join(serving) or "none"
    line = f"{shown}: schema version {version} of {len(MIGRATIONS)}; live instances: {live}"
    if version < len(MIGRATIONS):
        return "warn", line + " (roost serve migrates it at start)"
    return "ok", line


async def open_reachable(settings: DatabaseSettings, timeout_s: float) -> Database:
    """`roost doctor`'s one connection to `[database] url` (not migrated), waiting at most
    `timeout_s`; DatabaseUnreachable when the server does not answer."""
    url = postgres_url(settings)
    if url is None:
        raise ConfigError("no database.url")
    wait = min(timeout_s, settings.connect_timeout_s)
    return await postgres_engine().open(url, pool_size=1, connect_timeout_s=wait)


async def open_existing(path: Path) -> Database:
    """A `Database` on the existing roost.db at `path` as it is (`roost doctor`): not
    migrated, and the modes of the file and its WAL siblings left as they were (opening
    makes them 0600; the doctor reports, it does not repair)."""
    files = [path.with_name(path.name + s) for s in ("", "-wal", "-shm")]
    modes = {f: stat.S_IMODE(f.stat().st_mode) for f in files if f.exists()}
    try:
        return await SqliteDatabase.open(path, readers=READERS)
    finally:
        for f, mode in modes.items():
            if f.exists() and stat.S_IMODE(f.stat().st_mode) != mode:
                os.chmod(f, mode)
