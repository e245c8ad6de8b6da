"""A home's roost.db through a plain sqlite3 connection, migrated: for tests that set up or
read rows synchronously, or stand for another process on the file (a backup, an older roost).

Moved here from `bridge.core.db` when the daemon stopped opening this connection: the
schema is the one list of `bridge.storage.schema_sqlite`, counted in `PRAGMA user_version`
as the `SqliteDatabase` counts it; the file and its WAL siblings are made 0600.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from bridge.storage.schema_sqlite import SQLITE

MIGRATIONS: tuple[str, ...] = SQLITE


def connect(path: Path) -> sqlite3.Connection:
    """Open (and migrate) the database (0600 with its WAL files); WAL mode, foreign keys on."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    for sibling in (path, *(path.with_name(path.name + s) for s in ("-wal", "-shm", "-journal"))):
        with contextlib.suppress(FileNotFoundError):
            sibling.chmod(0o600)  # before SQLite opens them: an older roost left them 0644
    conn = sqlite3.connect(path, isolation_level=None, timeout=10.0)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=10000")
    migrate(conn)
    return conn


def migrate(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        for index in range(version, len(MIGRATIONS)):
            for statement in MIGRATIONS[index].split(";"):
                if statement.strip():
                    conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
