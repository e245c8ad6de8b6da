"""Session stores for tests: on a `Database` as the daemon builds them (`bridge.app.build`).

`store_on(db, conn)` builds the store with its archive; the failed turns and
the versions (`bridge.core.turn_failures`, `bridge.core.versions`) are on the
sqlite3 connection `conn`. The `open_store` fixture opens a store on the
test's roost.db (each call: a new `Database` and a new connection, as a
second process would have), all closed after the test.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from bridge.app.database import open_database
from bridge.core.conversations import ConversationArchive
from bridge.core.db import connect
from bridge.core.history_page import CurrentPage
from bridge.core.sessions import SessionStore
from bridge.core.turn_failures import TurnFailures
from bridge.core.versions import TurnVersions
from bridge.storage.protocol import Database

DAY = 86400.0
OpenStore = Callable[..., Awaitable[SessionStore]]


def store_on(
    db: Database, conn: sqlite3.Connection, budget: int = 1000, idle_s: float = 7 * DAY
) -> SessionStore:
    shown = CurrentPage(db, TurnFailures(conn), TurnVersions(conn))
    return SessionStore(db, budget, idle_s, ConversationArchive(db, shown))


@pytest.fixture
async def open_store(tmp_path: Path) -> AsyncIterator[OpenStore]:
    """open_store(budget=1000, idle_s=7 days, path=tmp_path/roost.db): a store of its own."""
    opened: list[tuple[Database, sqlite3.Connection]] = []

    async def open_(
        budget: int = 1000, idle_s: float = 7 * DAY, path: Path | None = None
    ) -> SessionStore:
        file = path or tmp_path / "roost.db"
        conn = connect(file)
        db = await open_database(file)
        opened.append((db, conn))
        return store_on(db, conn, budget, idle_s)

    yield open_
    for db, conn in reversed(opened):
        await db.aclose()
        conn.close()
