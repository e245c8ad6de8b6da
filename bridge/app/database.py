"""The `Database` the ported stores run on (`bridge.storage`), opened by the composition root.

During the move of the stores onto the protocol, roost.db has two ways in:
the one sqlite3 connection `bridge.core.db.connect` opens (the stores not
ported yet) and `open_database` here, a `SqliteDatabase` on the same file
(its own writer and reader threads; WAL, `busy_timeout` 10 s on every
connection, so a write through either is seen by the other's next read and
neither fails with "database is locked" while the other writes). Both count
the schema in `PRAGMA user_version` over one list of steps
(`bridge.storage.schema`), so a home's existing roost.db opens as it is;
`migrate` here adds only the engine's own `storage_*` tables. Only this
package names a backend (import-linter).
"""

from __future__ import annotations

from pathlib import Path

from bridge.storage.protocol import Database
from bridge.storage.schema import MIGRATIONS
from bridge.storage.sqlite import SqliteDatabase

READERS = 1  # reader threads beside the writer: the ported stores read little yet


async def open_database(path: Path) -> Database:
    """The migrated `Database` on the SQLite file `path` (created 0600 when missing)."""
    db = await SqliteDatabase.open(path, readers=READERS)
    try:
        await db.migrate(MIGRATIONS)
    except BaseException:
        await db.aclose()
        raise
    return db
