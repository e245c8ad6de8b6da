"""A migrated SQLite `Database` that records every statement its connections run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bridge.storage.schema import MIGRATIONS
from bridge.storage.sqlite import SqliteDatabase


async def traced(path: Path) -> tuple[SqliteDatabase, list[str]]:
    """The database on `path`, migrated, and the list its statements are appended to
    (for query plans and for what a store does or does not send)."""
    statements: list[str] = []

    def trace(conn: sqlite3.Connection) -> None:
        conn.set_trace_callback(statements.append)

    database = await SqliteDatabase.open(path, on_connect=trace)
    try:
        await database.migrate(MIGRATIONS)
    except BaseException:
        await database.aclose()
        raise
    return database, statements
