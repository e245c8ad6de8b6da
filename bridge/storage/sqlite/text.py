"""SQLite's text index: one FTS5 table per (index, tenant), so BM25's counts are the tenant's.

The table's name is derived from (index, tenant) (`storage_fts_` + a hash),
listed in `storage_fts` with its tenant (forget finds it there). Its one
column holds the document's terms (`bridge.storage.fts.terms`) joined by
spaces, under FTS5's `ascii` tokenizer: the terms contain no ASCII
separator and are lower case already, so FTS5 sees exactly these terms
(non-ASCII letters are term characters to it). Each call is one job on a
connection: creating the table when first written, reading nothing when
it does not exist yet. `add_many` writes its documents in one transaction (FTS5 writes
a segment per commit, and merges them as they pile up).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from bridge.storage import fts

T = TypeVar("T")


class Runner(Protocol):
    """What the index needs of `SqliteDatabase`: jobs on a reader or the writer."""

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T: ...

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T: ...


def table_name(name: str, tenant: str) -> str:
    digest = hashlib.sha256(f"{name}\0{tenant}".encode()).hexdigest()[:24]
    return f"storage_fts_{digest}"


def _missing(exc: sqlite3.OperationalError) -> bool:
    return "no such table" in str(exc)


class SqliteTextIndex:
    def __init__(self, db: Runner, name: str, tenant: str) -> None:
        self._db, self.name, self.tenant = db, name, tenant
        self._table = table_name(name, tenant)

    def _create(self, conn: sqlite3.Connection) -> None:
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {self._table} USING fts5(body, tokenize='ascii')"
        )
        conn.execute(
            "INSERT INTO storage_fts (tbl, name, tenant) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (self._table, self.name, self.tenant),
        )

    async def _read(self, fn: Callable[[sqlite3.Connection], T], empty: T) -> T:
        def job(conn: sqlite3.Connection) -> T:
            try:
                return fn(conn)
            except sqlite3.OperationalError as exc:
                if _missing(exc):
                    return empty
                raise

        return await self._db.read(job)

    async def add(self, doc: int, text: str) -> None:
        body = " ".join(fts.terms(text))

        def job(conn: sqlite3.Connection) -> None:
            sql = f"INSERT INTO {self._table} (rowid, body) VALUES (?, ?)"
            try:
                conn.execute(sql, (doc, body))
            except sqlite3.OperationalError as exc:
                if not _missing(exc):
                    raise
                self._create(conn)  # inside the caller's transaction when there is one
                conn.execute(sql, (doc, body))

        await self._db.write(job)

    async def add_many(self, docs: Sequence[tuple[int, str]]) -> None:
        rows = [(doc, " ".join(fts.terms(text))) for doc, text in docs]
        if not rows:
            return

        def insert(conn: sqlite3.Connection) -> None:
            sql = f"INSERT INTO {self._table} (rowid, body) VALUES (?, ?)"
            try:
                conn.executemany(sql, rows)
            except sqlite3.OperationalError as exc:
                if not _missing(exc):
                    raise
                self._create(conn)
                conn.executemany(sql, rows)

        def job(conn: sqlite3.Connection) -> None:
            if conn.in_transaction or len(rows) == 1:  # the caller's, or one statement's own
                insert(conn)
                return
            # one transaction: FTS5 flushes one segment per commit (a commit per row made
            # a segment per row, and merges to match)
            conn.execute("BEGIN IMMEDIATE")
            try:
                insert(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

        await self._db.write(job)

    async def remove(self, doc: int) -> bool:
        def job(conn: sqlite3.Connection) -> bool:
            try:
                cur = conn.execute(f"DELETE FROM {self._table} WHERE rowid = ?", (doc,))
            except sqlite3.OperationalError as exc:
                if _missing(exc):
                    return False
                raise
            return cur.rowcount > 0

        return await self._db.write(job)

    async def search(
        self, query: Sequence[str], limit: int, *, min_doc: int | None = None
    ) -> list[tuple[int, float]]:
        expr = fts.fts5_any(fts.query_terms(query))
        if not expr or limit <= 0:
            return []
        where = "" if min_doc is None else " AND rowid >= ?"
        args: tuple[object, ...] = (expr,) + (() if min_doc is None else (min_doc,))
        sql = (
            f"SELECT rowid, round(-bm25({self._table}), {fts.SCORE_DIGITS}) AS s "
            f"FROM {self._table} WHERE {self._table} MATCH ?{where} ORDER BY s DESC, rowid LIMIT ?"
        )
        none: list[tuple[int, float]] = []
        rows = await self._read(lambda c: c.execute(sql, (*args, limit)).fetchall(), none)
        return [(int(d), float(s)) for d, s in rows]

    async def doc_freq(self, query: Sequence[str], cap: int) -> dict[str, int]:
        found = fts.query_terms(query)
        t = self._table
        sql = f"SELECT count(*) FROM (SELECT 1 FROM {t} WHERE {t} MATCH ? LIMIT ?)"

        def job(conn: sqlite3.Connection) -> dict[str, int]:
            return {
                t: int(conn.execute(sql, (fts.fts5_any([t]), cap)).fetchone()[0]) for t in found
            }

        return await self._read(job, dict.fromkeys(found, 0))

    async def nth_newest(self, query: Sequence[str], n: int) -> int | None:
        expr = fts.fts5_any(fts.query_terms(query))
        if not expr or n <= 0:
            return None
        sql = (
            f"SELECT rowid FROM {self._table} WHERE {self._table} MATCH ? "
            "ORDER BY rowid DESC LIMIT 1 OFFSET ?"
        )
        row = await self._read(lambda c: c.execute(sql, (expr, n - 1)).fetchone(), None)
        return None if row is None else int(row[0])

    async def count(self) -> int:
        sql = f"SELECT count(*) FROM {self._table}"
        return int(await self._read(lambda c: c.execute(sql).fetchone()[0], 0))

    async def drop(self) -> None:
        def job(conn: sqlite3.Connection) -> None:
            conn.execute(f"DROP TABLE IF EXISTS {self._table}")
            conn.execute("DELETE FROM storage_fts WHERE tbl = ?", (self._table,))

        await self._db.write(job)

    async def documents(self, after: int, limit: int) -> list[tuple[int, str]]:
        sql = f"SELECT rowid, body FROM {self._table} WHERE rowid > ? ORDER BY rowid LIMIT ?"
        none: list[tuple[int, str]] = []
        rows = await self._read(lambda c: c.execute(sql, (after, limit)).fetchall(), none)
        return [(int(d), str(b)) for d, b in rows]
