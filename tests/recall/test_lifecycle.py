"""The index lives as long as the person's history: export includes it, backup and restore
carry it, forget removes it (its rows and its text index), and a retention, when set, drops
older messages."""

from __future__ import annotations

import json
import sqlite3
import zipfile
from pathlib import Path

from bridge.app.backup import backup, restore
from bridge.app.build import build
from bridge.app.database import open_database
from bridge.app.export import write_export
from bridge.app.forgetting import forget_tenant
from bridge.core.config import Settings
from bridge.recall.index import TEXT_INDEX, Message, legacy_path
from bridge.recall.indexer import DAY_MS, Indexer
from bridge.recall.search import search
from bridge.storage.protocol import Database
from bridge.types.tenant_dirs import TenantDirs
from tests.conftest import Clock, ScriptedBackend, web_msg
from tests.recall.legacy_files import old_index


async def chat(settings: Settings, clock: Clock) -> None:
    roost = await build(settings, backend=ScriptedBackend("Saffron is lovely."), clock=clock)
    try:
        await roost.core.handle(web_msg("I planted saffron crocuses in October", 1), None)
    finally:
        await roost.aclose()  # what the indexer queued is written first


async def test_export_backup_restore_forget(
    settings: Settings, clock: Clock, tmp_path: Path
) -> None:
    await chat(settings, clock)
    dirs = settings.home / "tenants" / "local" / "global"
    db = await open_database(settings.home / "roost.db")
    try:
        out = tmp_path / "export.zip"
        await write_export(settings.home, db, "local", out, "now")
        with zipfile.ZipFile(out) as zf:
            lines = [json.loads(x) for x in zf.read("history.jsonl").splitlines()]
            names = zf.namelist()
        assert [(r["role"], r["text"]) for r in lines] == [
            ("user", "I planted saffron crocuses in October"),
            ("assistant", "Saffron is lovely."),
        ]
        assert lines[0]["conversation"] == "web:c1" and lines[0]["id"] == "m1"
        assert not [n for n in names if n.startswith("db/recall_")]  # history.jsonl is it

        copy, home2 = tmp_path / "backup", tmp_path / "home2"
        backup(settings.home, copy)
        restore(copy, home2)
        conn = sqlite3.connect(home2 / "roost.db")
        assert conn.execute("SELECT count(*) FROM recall_messages").fetchone() == (2,)
        conn.close()

        async def record(gone: object) -> None:
            return None

        await forget_tenant(settings.home, "local", record)
        assert not dirs.exists()
        assert await db.fetch_value("SELECT count(*) FROM recall_messages") == 0
        assert await db.text_index_names("local") == []
        assert await db.text_index(TEXT_INDEX, "local").count() == 0
    finally:
        await db.aclose()


async def test_an_export_before_the_move_reads_the_file_of_before(
    settings: Settings, tmp_path: Path
) -> None:
    dirs = TenantDirs.of(settings.home, "local")
    said = Message("web:c1", "m9", "user", "the quince tree flowered", 1_000, "web")
    old_index(legacy_path(dirs), [said])
    db = await open_database(settings.home / "roost.db")
    try:
        out = tmp_path / "export.zip"
        await write_export(settings.home, db, "local", out, "now")
        with zipfile.ZipFile(out) as zf:
            lines = [json.loads(x) for x in zf.read("history.jsonl").splitlines()]
        assert [(r["id"], r["text"]) for r in lines] == [("m9", "the quince tree flowered")]
    finally:
        await db.aclose()


async def test_retention_drops_old_messages_once_a_day(tmp_path: Path, db: Database) -> None:
    dirs = TenantDirs.of(tmp_path, "t")
    indexer = Indexer(db, retention_days=30)
    day = DAY_MS / 1000
    indexer.record_exchange(dirs, "web", "c", "1", "old fjord trip", "nice", 1_000 * day)
    indexer.record_exchange(dirs, "web", "c", "2", "new fjord trip", "nice", 1_040 * day)
    await indexer.aclose()
    index = await indexer.index(dirs)
    assert [h.row.msg_id for h in await search(index, "fjord trip", 5)] == ["2"]
    assert await index.text.count() == 2  # the old exchange's terms went with it
