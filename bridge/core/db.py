"""roost.db checked before it is opened: a damaged file is one clear line, not a traceback.

Every store runs on the `Database` protocol (`bridge.storage`, opened by
`bridge.app.database`); nothing in the daemon opens roost.db with sqlite3
any more. What is left here is `check(path)`, run by `roost serve` before
anything else opens the file: `PRAGMA quick_check` on a connection of its
own, a corrupt or truncated file turned into `DatabaseDamaged`, one line
naming the file and what to do.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path


class DatabaseDamaged(Exception):
    """roost.db is not a usable SQLite database; the message names the file and the way out."""


def check(path: Path) -> None:
    """`PRAGMA quick_check` on an existing database; raise DatabaseDamaged when it fails."""
    if not path.is_file():
        return  # a new home: the Database creates it
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
            f"the database {path} is damaged ({problem}). Stop roost, move {path.name} "
            f"(and any {path.name}-wal, {path.name}-shm) aside, then restore a backup "
            "(roost restore) or start again with a new empty database"
        )
