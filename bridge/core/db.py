"""roost.db through a plain sqlite3 connection: the damaged-file check, and `connect`.

The daemon and the `roost` commands open roost.db only through the
`Database` protocol (`bridge.app.database`). What the daemon still uses here
is `check(path)`: `roost serve` runs it before anything else opens the
file; `PRAGMA quick_check` turns a corrupt or truncated file into
`DatabaseDamaged`, one line naming the file and what to do.

`connect(path)` (no caller in `bridge/`) opens and migrates the file on a
plain sqlite3 connection, as roost did before the stores moved: tests use it
to set up or read rows and to stand for another process on the file, and
bench/ for its "sqlite3 direct" baselines. Each migration is a step of
`bridge.storage.schema_sqlite`, counted in `PRAGMA user_version` as the
`SqliteDatabase` counts them; the file and its `-wal`/`-shm` files are 0600
whatever the process umask.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from bridge.storage.schema_sqlite import SQLITE

MIGRATIONS: tuple[str, ...] = SQLITE  # one list: bridge/storage/schema_sqlite.py


class DatabaseDamaged(Exception):
    """roost.db is not a usable SQLite database; the message names the file and the way out."""


def check(path: Path) -> None:
    """`PRAGMA quick_check` on an existing database; raise DatabaseDamaged when it fails."""
    if not path.is_file():
        return  # a new home: connect() creates it
    try:
        conn = sqlite3.connect(path.absolute().as_uri() + "?mode=rw", uri=True)
        try:
            rows = conn.execute("PRAGMA quick_check(3)").fetchall()
        finally:
            conn.close()
        found = [line.strip() for row in rows for line in str(row[0]).splitlines()]
        problem = "" if found == ["ok"] else "; ".join(found[:3])
    except sqlite3.Error as exc:
        problem = str(exc)
    if problem:
        problem = " ".join(problem.split())[:200]  # one line, whatever SQLite said
        raise DatabaseDamaged(
            f"the database {path} is damaged ({problem}). Stop roost, then either move "
            f"the home {path.parent} aside and restore a backup into it (`roost restore "
            "BACKUP`: it restores only into a new or empty home), or move "
            f"{path.name} (and any {path.name}-wal, {path.name}-shm) aside to start again "
            "with a new empty database"
        )


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
