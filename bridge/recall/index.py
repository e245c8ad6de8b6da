"""One tenant's message index: a SQLite file with the messages and an FTS5 table over their terms.

`tenants/<tid>/recall/index.sqlite` (0600, WAL) holds everything said in the
tenant's chats and everything imported, one row per message in `messages`
(conversation, id, role, name, time in ms, source, text), and `terms`, a
contentless FTS5 table (unicode61 over the pre-stemmed terms of
`bridge.recall.terms`) whose rowid is the message's. A file per tenant: one
tenant's search cannot reach another's rows, `roost forget` removes it with
the tenant's tree, backup copies it as it copies every SQLite file.
A message is known by (conversation, id): adding it again adds nothing, so an
import can be run twice. Deleting (retention, `delete_before`) removes the
terms with FTS5's 'delete' command, re-deriving them from the stored text.
Texts arrive masked: `Indexer` (bridge.recall.indexer) is the one door in.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from bridge.recall.terms import index_terms
from bridge.types.tenant_dirs import TenantDirs

FILENAME = "index.sqlite"
SCHEMA = (
    """CREATE TABLE IF NOT EXISTS messages (
        id INTEGER PRIMARY KEY,
        conversation TEXT NOT NULL,
        msg_id TEXT NOT NULL,
        role TEXT NOT NULL,
        name TEXT NOT NULL DEFAULT '',
        at_ms INTEGER NOT NULL,
        source TEXT NOT NULL,
        text TEXT NOT NULL,
        UNIQUE (conversation, msg_id)
    )""",
    "CREATE INDEX IF NOT EXISTS messages_order ON messages (conversation, at_ms)",
    "CREATE INDEX IF NOT EXISTS messages_time ON messages (at_ms)",
    """CREATE VIRTUAL TABLE IF NOT EXISTS terms USING fts5(
        body, who, content='', tokenize='unicode61 remove_diacritics 2'
    )""",
)


def index_path(dirs: TenantDirs) -> Path:
    """tenants/<tid>/recall/index.sqlite: beside global/, so never inside the files export."""
    return dirs.root.parent / "recall" / FILENAME


@dataclass(frozen=True, slots=True)
class Message:
    """One message to index (text already masked and screened)."""

    conversation: str
    msg_id: str
    role: str
    text: str
    at_ms: int
    source: str
    name: str = ""


@dataclass(frozen=True, slots=True)
class Row:
    """One stored message as search returns it."""

    rowid: int
    conversation: str
    msg_id: str
    role: str
    name: str
    at_ms: int
    source: str
    text: str


_COLUMNS = "id, conversation, msg_id, role, name, at_ms, source, text"


def who_terms(role: str, name: str) -> str:
    """The `who` column: the speaker's name and role as terms."""
    return index_terms(f"{name} {role}")


def open_index(path: Path) -> sqlite3.Connection:
    """Open (creating) an index file: 0600 with its WAL files, schema in place."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            path.with_name(path.name + suffix).chmod(0o600)
    conn = sqlite3.connect(path, isolation_level=None, timeout=30.0, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=30000")
    for statement in SCHEMA:
        conn.execute(statement)
    return conn


class RecallIndex:
    """The messages and terms of one tenant's index file (one connection)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    @classmethod
    def open(cls, path: Path) -> RecallIndex:
        return cls(open_index(path))

    def close(self) -> None:
        self.conn.close()

    def add(self, messages: Iterable[Message]) -> int:
        """Add messages in one transaction; those already known are skipped. Returns added."""
        conn, added = self.conn, 0
        conn.execute("BEGIN IMMEDIATE")
        try:
            for m in messages:
                cur = conn.execute(
                    "INSERT OR IGNORE INTO messages (conversation, msg_id, role, name, at_ms, "
                    "source, text) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (m.conversation, m.msg_id, m.role, m.name, m.at_ms, m.source, m.text),
                )
                if cur.rowcount != 1:
                    continue
                conn.execute(
                    "INSERT INTO terms (rowid, body, who) VALUES (?, ?, ?)",
                    (cur.lastrowid, index_terms(m.text), who_terms(m.role, m.name)),
                )
                added += 1
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return added

    def count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM messages").fetchone()[0])

    def text_bytes(self) -> int:
        """UTF-8 bytes of all stored texts (what the index's size is measured against)."""
        got = self.conn.execute("SELECT coalesce(sum(length(CAST(text AS BLOB))), 0) FROM messages")
        return int(got.fetchone()[0])

    def rows(self, rowids: Iterable[int]) -> dict[int, Row]:
        ids = list(rowids)
        found: dict[int, Row] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT {_COLUMNS} FROM messages WHERE id IN ({marks})"
            for r in self.conn.execute(sql, chunk):
                found[r[0]] = Row(*r)
        return found

    def neighbours(self, row: Row, before: int, after: int) -> tuple[list[Row], list[Row]]:
        """Up to `before` messages just before `row` in its conversation, and `after` after."""
        prev = self.conn.execute(
            f"SELECT {_COLUMNS} FROM messages WHERE conversation = ? AND "
            "(at_ms < ? OR (at_ms = ? AND id < ?)) ORDER BY at_ms DESC, id DESC LIMIT ?",
            (row.conversation, row.at_ms, row.at_ms, row.rowid, before),
        ).fetchall()
        nxt = self.conn.execute(
            f"SELECT {_COLUMNS} FROM messages WHERE conversation = ? AND "
            "(at_ms > ? OR (at_ms = ? AND id > ?)) ORDER BY at_ms, id LIMIT ?",
            (row.conversation, row.at_ms, row.at_ms, row.rowid, after),
        ).fetchall()
        return [Row(*r) for r in reversed(prev)], [Row(*r) for r in nxt]

    def iter_all(self) -> Iterator[Row]:
        """Every message, oldest first (the export)."""
        yield from (Row(*r) for r in self.conn.execute(f"SELECT {_COLUMNS} FROM messages ORDER BY at_ms, id"))

    def delete_before(self, cutoff_ms: int) -> int:
        """Remove messages older than `cutoff_ms` (retention); returns how many."""
        conn, removed = self.conn, 0
        conn.execute("BEGIN IMMEDIATE")
        try:
            old = conn.execute(
                "SELECT id, role, name, text FROM messages WHERE at_ms < ?", (cutoff_ms,)
            ).fetchall()
            for rowid, role, name, text in old:
                conn.execute(
                    "INSERT INTO terms (terms, rowid, body, who) VALUES ('delete', ?, ?, ?)",
                    (rowid, index_terms(text), who_terms(role, name)),
                )
                conn.execute("DELETE FROM messages WHERE id = ?", (rowid,))
                removed += 1
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return removed
