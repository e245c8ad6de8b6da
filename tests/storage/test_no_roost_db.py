"""With `[database] url` set, a roost writes nothing of its machine state to roost.db.

Before the last stores moved, `build()` opened `bridge.core.db`'s sqlite3 connection
whatever the URL said, so roost.db was created and the failed turns, the versions and the
drafts were written there. Now a daemon on PostgreSQL makes no roost.db at all: a turn, a
draft, a failed turn and a reset all land in PostgreSQL.
"""

from __future__ import annotations

import json
from pathlib import Path

from bridge.app.build import build
from bridge.core.config import Settings
from bridge.core.sessions import SessionKey
from bridge.types.messages import Inbound
from tests.conftest import ScriptedBackend
from tests.masking import m

ONE = 'def run() -> int:\n    """One."""\n    return 1\n'


def _web(text: str, n: int) -> Inbound:
    return Inbound("web", "local", "c1", text, str(n))


async def test_a_roost_on_postgresql_makes_no_roost_db(pg_url: str, home: Path) -> None:
    settings = Settings(home=home, database={"url": pg_url})
    create = json.dumps({"name": "num", "description": "a number", "source": ONE})
    backend = ScriptedBackend([("forge_create", create)], "made")
    roost = await build(settings, backend=backend)
    try:
        assert (await roost.core.handle(_web("write num", 1), None)).text.startswith("made")
        key = SessionKey("local", "web", "c1")
        await roost.sessions.failed(key, m("lost"), m(""), m("The model is away."), 2.0)
        said = await roost.core.handle(_web("/reset", 2), None)
        assert said.kind == "command"
        db = roost.database
        assert await db.fetch_value("SELECT count(*) FROM tool_drafts") == 1
        archived = await db.fetch_all("SELECT text FROM conversation_messages ORDER BY id")
        assert ("lost",) in archived and ("The model is away.",) in archived
    finally:
        await roost.aclose()
    assert not (home / "roost.db").exists(), "nothing opened roost.db"
