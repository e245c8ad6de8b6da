"""Index files as the code before the port made them (tenants/<tid>/recall/index.sqlite).

The schema and the writes are the old `bridge.recall.index` and
`bridge.recall.vectors` statements, verbatim: `messages` (with the 64-bit `key`
column of the oldest files when `keyed`), `conversations`, the contentless
FTS5 table `terms` (body and speaker's name), `speakers`, `vectors`,
`vector_model`.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from bridge.recall.index import Message
from bridge.recall.terms import index_terms

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS conversations (
        id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE
    )""",
    """CREATE TABLE IF NOT EXISTS messages (
        id INTEGER PRIMARY KEY,
        conv INTEGER NOT NULL,
        msg_id TEXT NOT NULL,
        role TEXT NOT NULL,
        name TEXT NOT NULL DEFAULT '',
        at_ms INTEGER NOT NULL,
        source TEXT NOT NULL,
        text TEXT NOT NULL
    )""",
    """CREATE VIRTUAL TABLE IF NOT EXISTS terms USING fts5(
        body, who, content='', tokenize='unicode61 remove_diacritics 2'
    )""",
    "CREATE TABLE IF NOT EXISTS speakers (name TEXT PRIMARY KEY) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS vectors (id INTEGER PRIMARY KEY, vec BLOB NOT NULL)",
    """CREATE TABLE IF NOT EXISTS vector_model (
        one INTEGER PRIMARY KEY CHECK (one = 1), name TEXT NOT NULL
    )""",
)
KEYED = """CREATE TABLE messages (
    id INTEGER PRIMARY KEY, key INTEGER NOT NULL UNIQUE, conv INTEGER NOT NULL,
    msg_id TEXT NOT NULL, role TEXT NOT NULL, name TEXT NOT NULL DEFAULT '',
    at_ms INTEGER NOT NULL, source TEXT NOT NULL, text TEXT NOT NULL)"""
IDENT = "CREATE UNIQUE INDEX IF NOT EXISTS messages_ident ON messages (conv, msg_id)"


def _key(m: Message) -> int:
    digest = hashlib.blake2b(f"{m.conversation}\0{m.msg_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def old_index(
    path: Path,
    messages: Sequence[Message],
    *,
    keyed: bool = False,
    vectors: dict[int, bytes] | None = None,
    model: str = "",
) -> None:
    """Write `messages` (and `vectors` by rowid) as the old code did."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    if keyed:
        conn.execute(KEYED)
    for statement in SCHEMA:
        conn.execute(statement)
    if not keyed:
        conn.execute(IDENT)
    conn.execute("BEGIN IMMEDIATE")
    for m in messages:
        conn.execute("INSERT OR IGNORE INTO conversations (name) VALUES (?)", (m.conversation,))
        (conv,) = conn.execute(
            "SELECT id FROM conversations WHERE name = ?", (m.conversation,)
        ).fetchone()
        row = (conv, m.msg_id, m.role, m.name, m.at_ms, m.source, m.text)
        if keyed:
            cur = conn.execute(
                "INSERT OR IGNORE INTO messages (key, conv, msg_id, role, name, at_ms, source, "
                "text) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (_key(m), *row),
            )
        else:
            cur = conn.execute(
                "INSERT OR IGNORE INTO messages (conv, msg_id, role, name, at_ms, source, text) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                row,
            )
        if cur.rowcount == 1:
            conn.execute(
                "INSERT INTO terms (rowid, body, who) VALUES (?, ?, ?)",
                (cur.lastrowid, index_terms(m.text), index_terms(m.name)),
            )
        conn.execute("INSERT OR IGNORE INTO speakers (name) VALUES (?)", (m.name,))
    if model:
        conn.execute("INSERT OR REPLACE INTO vector_model (one, name) VALUES (1, ?)", (model,))
    for rid, blob in (vectors or {}).items():
        conn.execute("INSERT OR REPLACE INTO vectors (id, vec) VALUES (?, ?)", (rid, blob))
    conn.execute("COMMIT")
    conn.close()


def old_bm25(path: Path, query_terms: list[str]) -> list[tuple[int, float]]:
    """(rowid, -bm25) best first, as the old search's FTS5 read them."""
    conn = sqlite3.connect(path)
    try:
        expr = " OR ".join('"' + t + '"' for t in query_terms)
        sql = "SELECT rowid, bm25(terms) AS s FROM terms WHERE terms MATCH ? ORDER BY s, rowid"
        return [(int(r), -float(s)) for r, s in conn.execute(sql, (expr,))]
    finally:
        conn.close()
