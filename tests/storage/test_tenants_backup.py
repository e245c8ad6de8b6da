"""Tenant tables for export and forget, and backup (conformance)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from bridge.storage.tenants import forget, tenant_rows, tenant_tables
from tests.storage.pg_server import bindir


async def _fill(db: Any) -> None:
    for tenant in ("alice", "bob"):
        await db.execute(
            "INSERT INTO token_usage (tenant, model, day, turns) VALUES (?, 'm', '2026-12-01', 3)",
            (tenant,),
        )
        await db.execute(
            "INSERT INTO chat_settings VALUES (?, 'telegram', 'c1', 'lang', 'en')", (tenant,)
        )
        await db.text_index("memory", tenant).add(7, f"notes of {tenant} about lanterns")


async def test_tenant_tables_are_found_from_the_schema(db: Any) -> None:
    found = await tenant_tables(db)
    assert {"token_usage", "chat_settings", "session_messages"} <= set(found)
    assert found == sorted(found)
    assert not any(t.startswith("storage_") for t in found)
    columns = await db.tables()
    assert all("tenant" in columns[t] for t in found)


async def test_export_reads_a_tenants_rows_and_forget_deletes_only_them(db: Any) -> None:
    await _fill(db)
    rows = [r async for r in tenant_rows(db, "token_usage", "alice")]
    assert len(rows) == 1 and rows[0]["tenant"] == "alice" and rows[0]["turns"] == 3
    gone = await forget(db, "alice")
    assert gone["token_usage"] == 1 and gone["chat_settings"] == 1
    assert await db.text_index_names("alice") == []
    assert await db.text_index("memory", "alice").search(["lanterns"], 5) == []
    assert await db.fetch_all("SELECT tenant FROM token_usage") == [("bob",)]
    assert await db.fetch_all("SELECT tenant FROM chat_settings") == [("bob",)]
    assert [d for d, _ in await db.text_index("memory", "bob").search(["lanterns"], 5)] == [7]


async def test_a_backup_is_a_private_consistent_copy(db: Any, backend: str, tmp_path: Path) -> None:
    await _fill(db)
    dest = tmp_path / "backups" / "roost.backup"
    await db.backup(dest)
    assert dest.stat().st_mode & 0o777 == 0o600
    assert not [p for p in dest.parent.iterdir() if p != dest]  # no temp file left
    if backend == "sqlite":
        copy = sqlite3.connect(dest)
        try:
            assert copy.execute("SELECT count(*) FROM token_usage").fetchone() == (2,)
        finally:
            copy.close()
        return
    assert dest.read_bytes()[:5] == b"PGDMP"  # pg_dump's custom format
    proc = await asyncio.create_subprocess_exec(
        str(bindir() / "pg_restore"), "--list", str(dest), stdout=asyncio.subprocess.PIPE
    )
    listing, _ = await proc.communicate()
    assert proc.returncode == 0
    assert b"TABLE DATA public token_usage" in listing
