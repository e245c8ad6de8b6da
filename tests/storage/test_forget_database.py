"""`roost forget`'s rows go from the database the ported stores use, PostgreSQL too.

A tenant's rows in ported tables and its text index, written through the
`Database` of `[database] url`, are gone after `forget_in_database`; another
tenant's stay. Before this, forget opened roost.db only, so on PostgreSQL a
forgotten person's sessions and recall index stayed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bridge.app.forgetting import forget_in_database
from bridge.core.config_sections import DatabaseSettings
from tests.storage.conftest import OpenDb


async def test_forget_empties_the_tenants_rows_and_text_index_on_the_configured_database(
    backend: str, location: str, open_db: OpenDb, tmp_path: Path
) -> None:
    db: Any = await open_db()
    for tenant in ("alice", "bob"):
        await db.execute(
            "INSERT INTO chat_settings (tenant, channel, chat, key, value) "
            "VALUES (?, 'web', 'c1', 'persona', 'p')",
            (tenant,),
        )
        await db.text_index("recall", tenant).add(1, f"the kettle of {tenant}")
    settings = DatabaseSettings(url=location) if backend == "postgresql" else None
    home = tmp_path if backend == "postgresql" else Path(location).parent
    gone = await forget_in_database(home, "alice", settings)
    assert gone["chat_settings"] == 1
    assert await db.fetch_all("SELECT tenant FROM chat_settings") == [("bob",)]
    assert await db.text_index_names("alice") == []
    assert await db.text_index("recall", "bob").search(["kettle"], 5) != []
