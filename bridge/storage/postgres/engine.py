"""PostgreSQL's side of the engine's own tables, migrations, discovery and backup.

Migrations run one step per transaction under a transaction-level advisory
lock (`MIGRATE_LOCK`): two instances starting at once run each step once,
and a migrator that dies mid-step leaves nothing of it (the server rolls
the transaction back; `client_connection_check_interval`, set on every
connection, makes it notice a dead client within seconds even during a
long statement). Versions are rows of `storage_schema`.

Backup is `pg_dump --format=custom` (a consistent snapshot by pg_dump's own
design; restore with `pg_restore`), run as a subprocess with the password
in its environment, never on its command line.
"""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from bridge.storage.errors import StorageError
from bridge.storage.migrations import Migration, pending

MIGRATE_LOCK = 0x726F6F7374  # "roost"
ENGINE = """
CREATE TABLE IF NOT EXISTS storage_schema (
    version BIGINT PRIMARY KEY, what TEXT NOT NULL, applied_ms BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS storage_leases (
    name TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_ms BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS storage_fts_docs (
    name TEXT NOT NULL, tenant TEXT NOT NULL, doc BIGINT NOT NULL, len INTEGER NOT NULL,
    terms TEXT[] NOT NULL, tfs INTEGER[] NOT NULL, tsv TSVECTOR NOT NULL,
    PRIMARY KEY (name, tenant, doc));
CREATE INDEX IF NOT EXISTS storage_fts_docs_tsv ON storage_fts_docs USING GIN (tsv);
CREATE TABLE IF NOT EXISTS storage_fts_stats (
    name TEXT NOT NULL, tenant TEXT NOT NULL, docs BIGINT NOT NULL, tokens BIGINT NOT NULL,
    PRIMARY KEY (name, tenant));
"""


async def version(conn: asyncpg.Connection) -> int:
    exists = await conn.fetchval("SELECT to_regclass('storage_schema') IS NOT NULL")
    if not exists:
        return 0
    return int(await conn.fetchval("SELECT COALESCE(MAX(version), 0) FROM storage_schema"))


async def create_engine_tables(conn: asyncpg.Connection) -> None:
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATE_LOCK)
        await conn.execute(ENGINE)


async def run_step(conn: asyncpg.Connection, step: Migration) -> bool:
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATE_LOCK)
        if await version(conn) >= step.version:
            return False
        await conn.execute(step.postgres)  # no arguments: the simple protocol, several statements
        await conn.execute(
            "INSERT INTO storage_schema (version, what, applied_ms) VALUES ($1, $2, $3)",
            step.version,
            step.what,
            int(time.time() * 1000),
        )
        return True


async def migrate(conn: asyncpg.Connection, migrations: Sequence[Migration]) -> int:
    await create_engine_tables(conn)
    for step in pending(migrations, await version(conn)):
        await run_step(conn, step)
    return await version(conn)


async def table_columns(conn: asyncpg.Connection) -> dict[str, tuple[str, ...]]:
    rows = await conn.fetch(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name NOT LIKE 'storage\\_%' "
        "ORDER BY table_name, ordinal_position"
    )
    found: dict[str, list[str]] = {}
    for r in rows:
        found.setdefault(str(r[0]), []).append(str(r[1]))
    return {name: tuple(cols) for name, cols in found.items()}


def pg_dump_path() -> str:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_dump"), key=lambda p: int(Path(p).parts[-3])
    )
    path = found[-1] if found else shutil.which("pg_dump")
    if not path:
        raise StorageError(
            "backup of a PostgreSQL database needs pg_dump (package postgresql-client)"
        )
    return path


async def dump(url: str, dest: Path) -> None:
    """`pg_dump --format=custom` of the database at `url` into `dest` (0600), atomically."""
    parts = urlsplit(url)
    env = dict(os.environ)
    if parts.password is not None:
        env["PGPASSWORD"] = parts.password
        netloc = (parts.username or "") + "@" + parts.netloc.rsplit("@", 1)[1]
        url = urlunsplit(parts._replace(netloc=netloc))
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    os.close(os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
    proc = await asyncio.create_subprocess_exec(
        pg_dump_path(),
        "--format=custom",
        f"--file={tmp}",
        f"--dbname={url}",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    _, err = await proc.communicate()
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise StorageError(
            f"pg_dump failed ({proc.returncode}): {err.decode(errors='replace')[-300:]}"
        )
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, dest)
