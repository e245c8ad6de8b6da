"""The index lives as long as the person's history: export includes it, backup and restore
carry it, forget removes it, and a retention, when set, drops older messages."""

from __future__ import annotations

import json
import sqlite3
import zipfile
from pathlib import Path

from bridge.app.backup import backup, restore
from bridge.app.build import build
from bridge.app.export import forget, write_export
from bridge.core.config import Settings
from bridge.core.db import connect
from bridge.recall.index import index_path
from bridge.recall.indexer import DAY_MS, Indexer
from bridge.recall.search import search
from tests.conftest import Clock, ScriptedBackend, web_msg


async def chat(settings: Settings, clock: Clock) -> None:
    roost = await build(settings, backend=ScriptedBackend("Saffron is lovely."), clock=clock)
    try:
        await roost.core.handle(web_msg("I planted saffron crocuses in October", 1), None)
    finally:
        await roost.aclose()


async def test_export_backup_restore_forget(
    settings: Settings, clock: Clock, tmp_path: Path
) -> None:
    await chat(settings, clock)
    dirs = settings.home / "tenants" / "local" / "global"
    path = settings.home / "tenants" / "local" / "recall" / "index.sqlite"
    assert path.exists()

    db = connect(settings.home / "roost.db")
    try:
        out = tmp_path / "export.zip"
        write_export(settings.home, db, "local", out, "now")
        with zipfile.ZipFile(out) as zf:
            lines = [json.loads(x) for x in zf.read("history.jsonl").splitlines()]
        assert [(r["role"], r["text"]) for r in lines] == [
            ("user", "I planted saffron crocuses in October"),
            ("assistant", "Saffron is lovely."),
        ]
        assert lines[0]["conversation"] == "web:c1" and lines[0]["id"] == "m1"

        copy, home2 = tmp_path / "backup", tmp_path / "home2"
        backup(settings.home, copy)
        restore(copy, home2)
        restored = home2 / "tenants" / "local" / "recall" / "index.sqlite"
        conn = sqlite3.connect(restored)
        assert conn.execute("SELECT count(*) FROM messages").fetchone() == (2,)
        conn.close()

        forget(settings.home, db, "local")
        assert not path.exists() and not dirs.exists()
    finally:
        db.close()


def test_retention_drops_old_messages_once_a_day(tmp_path: Path) -> None:
    from bridge.types.tenant_dirs import TenantDirs

    dirs = TenantDirs.of(tmp_path, "t")
    indexer = Indexer(retention_days=30)
    day = DAY_MS / 1000
    indexer.record_exchange(dirs, "web", "c", "1", "old fjord trip", "nice", 1_000 * day)
    indexer.record_exchange(dirs, "web", "c", "2", "new fjord trip", "nice", 1_040 * day)
    index = indexer.index(dirs)
    assert [h.row.msg_id for h in search(index, "fjord trip", 5)] == ["2"]
    assert index_path(dirs).exists()
