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

import os
import stat
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
