"""Closing a SQLite `Database` leaves roost.db whole: the writer closes last, alone, so
the WAL is checkpointed into the file and removed (a copy of roost.db alone then holds
every write, and `roost doctor` reads the file, not the WAL). Closed side by side with
the readers, 6 closes in 300 left the WAL behind."""

from __future__ import annotations

from pathlib import Path

from bridge.storage.sqlite.database import SqliteDatabase

CLOSES = 200


async def test_every_close_checkpoints_and_removes_the_wal(tmp_path: Path) -> None:
    left = []
    for i in range(CLOSES):
        path = tmp_path / f"{i}.db"
        db = await SqliteDatabase.open(path, readers=2)
        await db.execute("CREATE TABLE t (x)")
        await db.execute("INSERT INTO t VALUES (?)", (i,))
        assert await db.fetch_all("SELECT x FROM t") == [(i,)]
        await db.aclose()
        if path.with_name(path.name + "-wal").exists():
            left.append(i)
    assert left == []
