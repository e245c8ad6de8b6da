"""`roost export` and `roost forget` on the database every store uses, PostgreSQL too.

A tenant's rows (chat settings, session, a failed turn, a tool draft, its recall history)
are written through the `Database` of `[database] url`; the export holds exactly that
tenant's rows, and forgetting it deletes them and its text index and its files, while
nothing of another tenant is touched. Before, export and forget read roost.db through the
old sqlite3 connection, so on PostgreSQL these rows were neither exported nor forgotten.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from bridge.app.export import Forgotten, write_export
from bridge.app.forgetting import forget_tenant
from bridge.core.config_sections import DatabaseSettings
from bridge.core.sessions import SessionKey
from bridge.personal_tools.drafts import DraftStore
from bridge.types.tenant_dirs import TenantDirs
from forge.library import build_spec
from tests.masking import m
from tests.sessions_kit import store_on
from tests.storage.conftest import OpenDb

ONE = 'def run() -> int:\n    """One."""\n    return 1\n'


async def fill(db: Any, tenant: str) -> None:
    key = SessionKey(tenant, "web", "c1")
    await db.execute(
        "INSERT INTO chat_settings (tenant, channel, chat, key, value) "
        "VALUES (?, 'web', 'c1', 'persona', ?)",
        (tenant, f"persona of {tenant}"),
    )
    store = store_on(db)
    await store.append(key, m(f"hello from {tenant}"), m("hi"), "m1", 1.0)
    await store.failed(key, m(f"{tenant} asked"), m(""), m("The model is away."), 2.0)
    spec = build_spec("num", "a number", ONE).tool
    assert spec is not None
    await DraftStore(db, lambda: 1).put(key, spec, m(ONE))
    await db.text_index("recall", tenant).add(1, f"the kettle of {tenant}")


async def test_a_tenant_is_exported_and_forgotten_and_no_other_touched(
    backend: str, location: str, open_db: OpenDb, tmp_path: Path
) -> None:
    db: Any = await open_db()
    for tenant in ("alice", "bob"):
        await fill(db, tenant)
    settings = DatabaseSettings(url=location) if backend == "postgresql" else None
    home = tmp_path if backend == "postgresql" else Path(location).parent
    alice = TenantDirs.of(home, "alice")
    alice.root.mkdir(parents=True)
    (alice.root / "USER.md").write_text("Alice likes tea\n")
    out = tmp_path / "alice.zip"
    handle = await open_db(migrate=False)  # what the export reads through
    done = await write_export(home, handle, "alice", out, "now")
    with zipfile.ZipFile(out) as zf:
        tables = {
            n[3:-6]: [json.loads(x) for x in zf.read(n).splitlines()]
            for n in zf.namelist()
            if n.startswith("db/")
        }
    for table in ("chat_settings", "sessions", "session_messages", "failed_turns"):
        assert tables[table], f"alice's {table} is exported"
    assert tables["tool_drafts"][0]["source"] == ONE
    assert {r["tenant"] for rows in tables.values() for r in rows} == {"alice"}
    assert done.rows == sum(len(rows) for rows in tables.values())

    async def record(gone: Forgotten) -> None:
        return None

    gone = await forget_tenant(home, "alice", record, settings)
    assert gone.rows["failed_turns"] == 2 and gone.rows["tool_drafts"] == 1
    assert gone.files == 1 and not alice.root.exists()
    for table in ("chat_settings", "sessions", "session_messages", "failed_turns", "tool_drafts"):
        found = await db.fetch_all(f"SELECT DISTINCT tenant FROM {table}")
        assert found == [("bob",)], table
    assert await db.text_index_names("alice") == []
    assert await db.text_index("recall", "bob").search(["kettle"], 5) != []
