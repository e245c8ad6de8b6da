"""A `SqliteDatabase` opened beside `bridge.core.db`'s connection on one roost.db, as the
daemon has them while the stores move onto the protocol: both stay usable whatever
another process does with the file."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from bridge.core import db as core_db
from bridge.storage.schema import MIGRATIONS
from bridge.storage.sqlite import SqliteDatabase

PEEK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
conn.execute("SELECT COUNT(*) FROM chat_settings").fetchall()
conn.close()  # the last connection of this process: it checkpoints, and would delete the WAL
"""


async def test_another_process_closing_its_connection_leaves_the_wal_alone(
    tmp_path: Path,
) -> None:
    """Opening the `Database` must not drop the daemon connection's lock on the file:
    with it dropped, a `roost jobs` (another process) closing its connection took the
    database for unused, checkpointed and deleted the WAL, and the daemon's next read
    failed with "disk I/O error" (SQLITE_IOERR_SHORT_READ)."""
    path = tmp_path / "roost.db"
    core_db.connect(path).close()  # the home exists already (a daemon ran before)
    conn = core_db.connect(path)
    database = await SqliteDatabase.open(path)
    try:
        assert await database.migrate(MIGRATIONS) == len(MIGRATIONS)
        for n in range(3):
            await database.execute(
                "INSERT INTO chat_settings VALUES ('a', 'web', 'c', ?, 'v')", (f"k{n}",)
            )
            peek = await asyncio.create_subprocess_exec(sys.executable, "-c", PEEK, str(path))
            assert await peek.wait() == 0
            assert path.with_name("roost.db-wal").exists()
            assert await database.fetch_value("SELECT COUNT(*) FROM chat_settings") == n + 1
            assert conn.execute("SELECT COUNT(*) FROM chat_settings").fetchone() == (n + 1,)
    finally:
        await database.aclose()
        conn.close()
