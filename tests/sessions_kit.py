"""Session stores for tests: on a `Database` as the daemon builds them (`bridge.app.build`).

`store_on(db)` builds the store with its archive, the failed turns and the
versions (`bridge.core.turn_failures`, `bridge.core.versions`) on the same
`Database`. The `open_store` fixture opens a store on the test's roost.db
(each call: a new `Database`, as a second process would have), all closed
after the test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from bridge.app.database import open_database
from bridge.core.conversations import ConversationArchive
from bridge.core.history_page import CurrentPage
from bridge.core.sessions import SessionStore
from bridge.core.turn_failures import TurnFailures
from bridge.core.versions import TurnVersions
from bridge.storage.protocol import Database

DAY = 86400.0
OpenStore = Callable[..., Awaitable[SessionStore]]


def store_on(db: Database, budget: int = 1000, idle_s: float = 7 * DAY) -> SessionStore:
    shown = CurrentPage(db, TurnFailures(db), TurnVersions(db))
    return SessionStore(db, budget, idle_s, ConversationArchive(db, shown))


@pytest.fixture
async def open_store(tmp_path: Path) -> AsyncIterator[OpenStore]:
    """open_store(budget=1000, idle_s=7 days, path=tmp_path/roost.db): a store of its own."""
    opened: list[Database] = []

    async def open_(
        budget: int = 1000, idle_s: float = 7 * DAY, path: Path | None = None
    ) -> SessionStore:
        file = path or tmp_path / "roost.db"
        db = await open_database(file)
        opened.append(db)
        return store_on(db, budget, idle_s)

    yield open_
    for db in reversed(opened):
        await db.aclose()
