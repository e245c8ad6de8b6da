"""The recall tests' `Database`: a fresh roost.db (SQLite) in the test's directory;
`traced_index`: one whose statements are recorded, with its indexer and a tenant.

Both backends are run by `tests/storage/test_recall_store.py`; these tests
check the behaviour above the store (search, screening, import, the turn).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.app.database import open_database
from bridge.recall.indexer import Indexer
from bridge.storage.protocol import Database
from bridge.storage.sqlite import SqliteDatabase
from bridge.types.tenant_dirs import TenantDirs
from tests.storage.traced import traced

Traced = tuple[SqliteDatabase, list[str], Indexer, TenantDirs]


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await open_database(tmp_path / "roost.db")
    yield database
    await database.aclose()


@pytest.fixture
async def traced_index(tmp_path: Path) -> AsyncIterator[Traced]:
    """A traced database (every statement it runs), its indexer and tenant t's folders."""
    db, statements = await traced(tmp_path / "roost.db")
    try:
        yield db, statements, Indexer(db), TenantDirs.of(tmp_path, "t")
    finally:
        await db.aclose()
