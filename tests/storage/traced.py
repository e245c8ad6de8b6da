"""A migrated SQLite `Database` that records every statement its connections run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bridge.storage.schema import MIGRATIONS
from bridge.storage.sqlite import SqliteDatabase
from bridge.storage.sqlite.database import ALONE

# What the engine itself sends around a store's statements, left out of the list: the
# busy_timeout of a write run inline (`Worker.try_inline`), the transaction of its own
# an inline single statement runs in (`database.ALONE`, spelled apart from any unit's)
# and the queued WAL checkpoint.
ENGINE_OWN = ("PRAGMA busy_timeout=", "PRAGMA wal_checkpoint(", *ALONE)


async def traced(path: Path) -> tuple[SqliteDatabase, list[str]]:
    """The database on `path`, migrated, and the list its statements are appended to
    (for query plans and for what a store does or does not send)."""
    statements: list[str] = []

    def record(sql: str) -> None:
        if not sql.startswith(ENGINE_OWN):
            statements.append(sql)

    def trace(conn: sqlite3.Connection) -> None:
        conn.set_trace_callback(record)

    database = await SqliteDatabase.open(path, on_connect=trace)
    try:
        await database.migrate(MIGRATIONS)
    except BaseException:
        await database.aclose()
        raise
    return database, statements
