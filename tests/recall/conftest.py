"""The recall tests' `Database`: a fresh roost.db (SQLite) in the test's directory.

Both backends are run by `tests/storage/test_recall_store.py`; these tests
check the behaviour above the store (search, screening, import, the turn).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.app.database import open_database
from bridge.storage.protocol import Database


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await open_database(tmp_path / "roost.db")
    yield database
    await database.aclose()
