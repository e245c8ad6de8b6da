"""A `Database` (the ported stores' way into roost.db) on a test's SQLite file, as the
daemon opens it beside `bridge.core.db`'s connection (`bridge.app.database`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from bridge.app.database import open_database
from bridge.storage.protocol import Database


@asynccontextmanager
async def database_of(path: Path) -> AsyncIterator[Database]:
    db = await open_database(path)
    try:
        yield db
    finally:
        await db.aclose()
