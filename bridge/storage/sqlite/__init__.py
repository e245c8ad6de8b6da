"""The SQLite backend: `SqliteDatabase` (one writer thread, reader threads, WAL)."""

from bridge.storage.sqlite.database import SqliteDatabase

__all__ = ["SqliteDatabase"]
