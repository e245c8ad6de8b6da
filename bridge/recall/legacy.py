"""The index file per tenant of before (tenants/<tid>/recall/index.sqlite), moved to the `Database`.

Until the recall index ran on the storage layer, each tenant's messages lived
in their own SQLite file (tables `messages`, `conversations`, `speakers`,
`vectors`, `vector_model` and a contentless FTS5 table `terms`). `move_legacy`
copies such a file into the tenant's rows and text index, keeping every id
(a message's id is its rowid there, so its vector, its conversation and the
order the ranking reads its neighbours in stay the same), re-deriving each
message's terms from its stored text (the FTS5 table held no text; the terms
are the same function of it). It runs at the first use of a tenant's index
(`Indexer.index`), before anything is written for the tenant, and can be run
again after a crash: per page of messages the terms are added first, then
the rows (one `execute_many`), and a re-run removes the terms of the page it
re-does before adding them. Once the tenant's message count matches the
file's, the file and its WAL files are deleted; a count that does not match
keeps the file (logged) for the next start to try again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bridge.recall.index import RecallIndex, Row, document, legacy_path
from bridge.recall.terms import index_terms
from bridge.types.tenant_dirs import TenantDirs

log = logging.getLogger(__name__)
PAGE = 500
_LEGACY_ROWS = (
    "SELECT m.id, c.name, m.msg_id, m.role, m.name, m.at_ms, m.source, m.text "
    "FROM messages m JOIN conversations c ON c.id = m.conv ORDER BY m.id"
)


def _read(path: Path, sql: str, args: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
    try:
        return conn.execute(sql, args).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []  # a file made before that table existed
        raise
    finally:
        conn.close()


async def _rows(path: Path, sql: str, args: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
    return await asyncio.to_thread(_read, path, sql, args)


async def move_legacy(index: RecallIndex, dirs: TenantDirs) -> int:
    """Move the tenant's index file of before, when there is one; the messages moved."""
    path = legacy_path(dirs)
    if not path.is_file():
        return 0
    db, tenant = index.db, index.tenant
    resuming = await index.count() > 0
    conversations = await _rows(path, "SELECT id, name FROM conversations ORDER BY id")
    for start in range(0, len(conversations), PAGE):
        await db.execute_many(
            "INSERT INTO recall_conversations (tenant, id, name) VALUES (?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            [(tenant, int(i), str(n)) for i, n in conversations[start : start + PAGE]],
        )
    moved, after = 0, 0
    while True:
        page = await _rows(
            path,
            "SELECT id, conv, msg_id, role, name, at_ms, source, text FROM messages "
            "WHERE id > ? ORDER BY id LIMIT ?",
            (after, PAGE),
        )
        if not page:
            break
        moved += await _move_page(index, page, resuming)
        after = int(page[-1][0])
    # every name a kept message carries (what the old file's `speakers` held, and what a
    # file made before that table filled it with at its next open)
    speakers = await _rows(path, "SELECT DISTINCT name FROM messages")
    await db.execute_many(
        "INSERT INTO recall_speakers (tenant, name) VALUES (?, ?) ON CONFLICT DO NOTHING",
        [(tenant, str(n)) for (n,) in speakers],
    )
    await _move_vectors(index, path)
    want = (await _rows(path, "SELECT count(*) FROM messages"))[0][0]
    have = await index.count()
    if have < int(want):
        log.error("recall: %s moved %d of %d messages; the file is kept", path, have, want)
        return moved
    for suffix in ("-wal", "-shm", ""):
        with contextlib.suppress(FileNotFoundError):
            path.with_name(path.name + suffix).unlink()
    log.info("recall: %d messages of %s moved into the database", have, dirs.tenant)
    return moved


async def _move_page(index: RecallIndex, page: list[tuple[Any, ...]], resuming: bool) -> int:
    db, tenant = index.db, index.tenant
    ids = [int(r[0]) for r in page]
    there = {
        int(i)
        for (i,) in await db.fetch_all(
            "SELECT id FROM recall_messages WHERE tenant = ? AND id BETWEEN ? AND ?",
            (tenant, ids[0], ids[-1]),
        )
    }
    missing = [r for r in page if int(r[0]) not in there]
    if resuming:  # a crash may have left this page's terms without its rows
        for row in missing:
            await index.text.remove(int(row[0]))
    await index.text.add_many(
        [(int(r[0]), document(index_terms(r[7]), index_terms(r[4]))) for r in missing]
    )
    await db.execute_many(
        "INSERT INTO recall_messages (tenant, id, conv, msg_id, role, name, at_ms, source, text) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        [(tenant, *r) for r in missing],
    )
    return len(missing)


async def _move_vectors(index: RecallIndex, path: Path) -> None:
    db, tenant = index.db, index.tenant
    model = await _rows(path, "SELECT name FROM vector_model WHERE one = 1")
    if not model:
        return
    await db.execute(
        "INSERT INTO recall_vector_model (tenant, name) VALUES (?, ?) ON CONFLICT DO NOTHING",
        (tenant, str(model[0][0])),
    )
    after = 0
    while True:
        page = await _rows(
            path, "SELECT id, vec FROM vectors WHERE id > ? ORDER BY id LIMIT ?", (after, PAGE)
        )
        if not page:
            return
        await db.execute_many(
            "INSERT INTO recall_vectors (tenant, id, vec) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            [(tenant, int(i), bytes(v)) for i, v in page],
        )
        after = int(page[-1][0])


def legacy_rows(dirs: TenantDirs) -> Iterator[Row]:
    """The messages of the tenant's index file of before, in the order stored (an export
    made before the daemon moved the file); nothing when there is none."""
    path = legacy_path(dirs)
    if not path.is_file():
        return
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
    try:
        yield from (Row(*r) for r in conn.execute(_LEGACY_ROWS))
    finally:
        conn.close()
