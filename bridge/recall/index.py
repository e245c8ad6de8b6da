"""One tenant's message index: a SQLite file with the messages and an FTS5 table over their terms.

`tenants/<tid>/recall/index.sqlite` (0600, WAL) holds everything said in the
tenant's chats and everything imported, one row per message in `messages`
(conversation, id, role, name, time in ms, source, text), and `terms`, a
contentless FTS5 table (unicode61 over the pre-stemmed terms of
`bridge.recall.terms`) whose rowid is the message's. A file per tenant: one
tenant's search cannot reach another's rows, `roost forget` removes it with
the tenant's tree, backup copies it as it copies every SQLite file.
A message is known by (conversation, id), a unique index over the two
(`messages_ident`): adding it again adds nothing, so an import can be run
twice. Files made before it carry a 64-bit hash of the two in a `key` column
with its own unique index instead, and keep it (`keyed`); the new form is
about 0.07x the text smaller. Deleting (retention, `delete_before`) removes the
terms with FTS5's 'delete' command, re-deriving them from the stored text.
`speakers` lists the speakers' names of its messages (filled from the
messages once in a file made before it; retention drops a name no kept
message carries), so the search knows which query words are names.
Texts arrive masked: `Indexer` (bridge.recall.indexer) is the one door in.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from bridge.recall.match import quote
from bridge.recall.terms import index_terms
from bridge.recall.vectors import SCHEMA as VECTOR_SCHEMA
from bridge.types.tenant_dirs import TenantDirs

FILENAME = "index.sqlite"
NEAR = 2000  # rows looked through on either side for a message's neighbours
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
)


IDENT = "CREATE UNIQUE INDEX IF NOT EXISTS messages_ident ON messages (conv, msg_id)"


def keyed(conn: sqlite3.Connection) -> bool:
    """True for an index file made before the identity index: its messages carry a
    64-bit `key` (a hash of conversation and id) with a unique index of its own."""
    return any(row[1] == "key" for row in conn.execute("PRAGMA table_info(messages)"))


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


_INSERT = (
    "INSERT OR IGNORE INTO messages (conv, msg_id, role, name, at_ms, source, text) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_KEYED = (
    "INSERT OR IGNORE INTO messages (key, conv, msg_id, role, name, at_ms, source, text) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_COLUMNS = "m.id, c.name, m.msg_id, m.role, m.name, m.at_ms, m.source, m.text"
_FROM = "messages m JOIN conversations c ON c.id = m.conv"


def _cached(names: dict[str, str], name: str) -> str:
    found = names.get(name)
    if found is None:
        found = names[name] = index_terms(name)
    return found


def message_key(m: Message) -> int:
    """A message's identity, (conversation, id), as a signed 64-bit hash (the unique key)."""
    digest = hashlib.blake2b(f"{m.conversation}\0{m.msg_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@lru_cache(maxsize=4096)
def _name_terms(name: str) -> tuple[str, ...]:
    return tuple(index_terms(name).split())


def who_terms(role: str, name: str) -> str:
    """The speaker's name and role as terms (the ranking's speaker boost)."""
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
    for statement in (*SCHEMA, *VECTOR_SCHEMA):
        conn.execute(statement)
    if not keyed(conn):  # a file made before keeps its `key` column and index
        conn.execute(IDENT)
    if conn.execute("SELECT 1 FROM speakers LIMIT 1").fetchone() is None:
        # a file made before the speakers table: its names once (nothing when empty)
        conn.execute("INSERT OR IGNORE INTO speakers (name) SELECT DISTINCT name FROM messages")
    return conn


class RecallIndex:
    """The messages and terms of one tenant's index file (one connection)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._keyed = keyed(conn)
        # what this connection wrote or read before, so a live turn's two messages are
        # their inserts only: a conversation's id never changes once given (rows of
        # `conversations` are never deleted), a speaker's row stays until a retention
        # prune on this connection (which forgets these)
        self._conv_ids: dict[str, int] = {}
        self._speakers: set[str] = set()

    @classmethod
    def open(cls, path: Path) -> RecallIndex:
        return cls(open_index(path))

    def close(self) -> None:
        self.conn.close()

    def add(self, messages: Iterable[Message]) -> int:
        """Add messages in one transaction; those already known are skipped. Returns added."""
        conn, added = self.conn, 0
        convs: dict[str, int] = {}
        names: dict[str, str] = {}  # speaker name -> its terms (a few speakers, many rows)
        conn.execute("BEGIN IMMEDIATE")
        try:
            for m in messages:
                conv = convs.get(m.conversation)
                if conv is None:
                    conv = convs[m.conversation] = self._conversation(m.conversation)
                row = (conv, m.msg_id, m.role, m.name, m.at_ms, m.source, m.text)
                if self._keyed:
                    cur = conn.execute(_INSERT_KEYED, (message_key(m), *row))
                else:
                    cur = conn.execute(_INSERT, row)
                if cur.rowcount != 1:
                    continue
                conn.execute(
                    "INSERT INTO terms (rowid, body, who) VALUES (?, ?, ?)",
                    (cur.lastrowid, index_terms(m.text), _cached(names, m.name)),
                )
                added += 1
            new_names = [n for n in names if n not in self._speakers]
            if new_names:
                conn.executemany(
                    "INSERT OR IGNORE INTO speakers (name) VALUES (?)", ((n,) for n in new_names)
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            self._conv_ids.clear()  # ids read inside the rolled-back transaction may be gone
            raise
        self._speakers.update(names)
        return added

    def _conversation(self, name: str) -> int:
        known = self._conv_ids.get(name)
        if known is not None:
            return known
        self.conn.execute("INSERT OR IGNORE INTO conversations (name) VALUES (?)", (name,))
        got = self.conn.execute("SELECT id FROM conversations WHERE name = ?", (name,))
        ident = self._conv_ids[name] = int(got.fetchone()[0])
        return ident

    def speaker_terms(self) -> frozenset[str]:
        """The terms of every speaker's name the index has seen (a few rows)."""
        names = self.conn.execute("SELECT name FROM speakers").fetchall()
        return frozenset(t for (name,) in names for t in _name_terms(name))

    def doc_freq(self, terms: list[str], cap: int) -> dict[str, int]:
        """How many messages hold each term, counted up to `cap` (the work stays bounded)."""
        sql = "SELECT count(*) FROM (SELECT 1 FROM terms WHERE terms MATCH ? LIMIT ?)"
        return {t: int(self.conn.execute(sql, (quote(t), cap)).fetchone()[0]) for t in terms}

    def newest_bound(self, expr: str, count: int) -> int | None:
        """The rowid of the `count`-th newest message matching `expr` (None: fewer match)."""
        sql = "SELECT rowid FROM terms WHERE terms MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?"
        row = self.conn.execute(sql, (expr, count - 1)).fetchone()
        return int(row[0]) if row is not None else None

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
            sql = f"SELECT {_COLUMNS} FROM {_FROM} WHERE m.id IN ({marks})"
            for r in self.conn.execute(sql, chunk):
                found[r[0]] = Row(*r)
        return found

    def speakers(self, rowids: Iterable[int]) -> dict[int, tuple[int, str, str]]:
        """rowid -> (conversation id, role, name): what the ranking needs, not the text."""
        ids = list(rowids)
        found: dict[int, tuple[int, str, str]] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT id, conv, role, name FROM messages WHERE id IN ({marks})"
            for r in self.conn.execute(sql, chunk):
                found[r[0]] = (r[1], r[2], r[3])
        return found

    def neighbours(self, row: Row, before: int, after: int) -> tuple[list[Row], list[Row]]:
        """Up to `before` messages stored just before `row` in its conversation, and `after`
        after (looked for among the NEAR rows on either side: a conversation's messages are
        stored in order, interleaved only with other chats' at the same time)."""
        conv = f"(SELECT conv FROM messages WHERE id = {int(row.rowid)})"
        prev = self.conn.execute(
            f"SELECT {_COLUMNS} FROM {_FROM} WHERE m.id BETWEEN ? AND ? AND m.conv = {conv} "
            "ORDER BY m.id DESC LIMIT ?",
            (row.rowid - NEAR, row.rowid - 1, before),
        ).fetchall()
        nxt = self.conn.execute(
            f"SELECT {_COLUMNS} FROM {_FROM} WHERE m.id BETWEEN ? AND ? AND m.conv = {conv} "
            "ORDER BY m.id LIMIT ?",
            (row.rowid + 1, row.rowid + NEAR, after),
        ).fetchall()
        return [Row(*r) for r in reversed(prev)], [Row(*r) for r in nxt]

    def iter_all(self) -> Iterator[Row]:
        """Every message, in the order stored (the export)."""
        sql = f"SELECT {_COLUMNS} FROM {_FROM} ORDER BY m.id"
        yield from (Row(*r) for r in self.conn.execute(sql))

    def delete_before(self, cutoff_ms: int) -> int:
        """Remove messages older than `cutoff_ms` (retention); returns how many."""
        conn, removed = self.conn, 0
        conn.execute("BEGIN IMMEDIATE")
        try:
            old = conn.execute(
                "SELECT id, name, text FROM messages WHERE at_ms < ?", (cutoff_ms,)
            ).fetchall()
            for rowid, name, text in old:
                conn.execute(
                    "INSERT INTO terms (terms, rowid, body, who) VALUES ('delete', ?, ?, ?)",
                    (rowid, index_terms(text), index_terms(name)),
                )
                conn.execute("DELETE FROM messages WHERE id = ?", (rowid,))
                conn.execute("DELETE FROM vectors WHERE id = ?", (rowid,))
                removed += 1
            if removed:  # a name none of the kept messages carries goes too
                conn.execute(
                    "DELETE FROM speakers WHERE name NOT IN (SELECT DISTINCT name FROM messages)"
                )
                self._speakers.clear()
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return removed
