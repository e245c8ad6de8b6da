"""SQLite's text index: one FTS5 table for every (index, tenant), BM25 from the tenant's counts.

An (index, tenant) pair is a row of `storage_fts_stats`: its integer `key`,
its number of documents and of terms. A document is a row of
`storage_fts_docs` (key, doc, length, body); its body is its terms
(`bridge.storage.fts.terms`) joined by spaces, each prefixed by the key
(`12_word`). The job that inserts rows writes them to the one contentless
FTS5 table `storage_fts_text` (rowid = the row's id) and counts them in
the stats, in one transaction (not by a trigger: FTS5 flushes a segment
per trigger statement); a trigger on delete gives FTS5 the body back and
uncounts the row. Under FTS5's `ascii` tokenizer with `_` a term
character, FTS5 sees exactly these prefixed terms (the terms hold no `_`
and no ASCII separator, and are lower case already), so a term's postings
are the tenant's own: a match is tenant-scoped, and the schema does not
grow with the tenants (one FTS5 table per tenant made every connection
re-parse a schema that grew by ~6 tables per new tenant).

Ranking: FTS5's own `bm25()` would count every tenant's documents, so a
search computes the same formula (`bridge.storage.fts`) in SQL, as the
PostgreSQL backend does: N and the average length from the tenant's stats,
each term's document frequency from `fts5vocab` 'row' (`storage_fts_terms`),
each hit's term frequencies from `fts5vocab` 'instance' (`storage_fts_hits`).
A search from `min_doc` on (recall scores only the newest matches: `nth_newest`
then `search`) reads instead the matches from FTS5 MATCH with a rowid floor
(FTS5 seeks there) and counts their terms in their bodies, so its work is the
newest matches', not every posting's; `nth_newest` reads the newest rowids
backwards. `bench.fts_layout` compares both with the old layout.

`upgrade` moves a home of the old layout (one FTS5 table per pair, listed
in `storage_fts`) into this one and drops the old tables.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from bridge.storage import fts

T = TypeVar("T")

TABLES = (
    "CREATE TABLE IF NOT EXISTS storage_fts_stats (key INTEGER PRIMARY KEY, "
    "name TEXT NOT NULL, tenant TEXT NOT NULL, docs INTEGER NOT NULL, "
    "tokens INTEGER NOT NULL, UNIQUE (name, tenant))",
    "CREATE TABLE IF NOT EXISTS storage_fts_docs (id INTEGER PRIMARY KEY, "
    "key INTEGER NOT NULL, doc INTEGER NOT NULL, len INTEGER NOT NULL, body TEXT NOT NULL, "
    "UNIQUE (key, doc))",
    "CREATE VIRTUAL TABLE IF NOT EXISTS storage_fts_text USING fts5(body, content='', "
    "columnsize=0, tokenize=\"ascii tokenchars '_'\")",
    "CREATE VIRTUAL TABLE IF NOT EXISTS storage_fts_terms USING fts5vocab(storage_fts_text, row)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS storage_fts_hits "
    "USING fts5vocab(storage_fts_text, instance)",
    # a delete is one statement (a trigger's statement flushes FTS5's pending segment:
    # cheap for a delete, a segment per row for an insert, which the job does itself)
    "CREATE TRIGGER IF NOT EXISTS storage_fts_docs_gone AFTER DELETE ON storage_fts_docs BEGIN "
    "INSERT INTO storage_fts_text (storage_fts_text, rowid, body) "
    "VALUES ('delete', old.id, old.body); "
    "UPDATE storage_fts_stats SET docs = docs - 1, tokens = tokens - old.len "
    "WHERE key = old.key; END",
)
_KEY = "SELECT key FROM storage_fts_stats WHERE name = ? AND tenant = ?"
_COUNT_IN = (
    "INSERT INTO storage_fts_stats (name, tenant, docs, tokens) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (name, tenant) DO UPDATE SET docs = docs + excluded.docs, "
    "tokens = tokens + excluded.tokens RETURNING key"
)
_INSERT = "INSERT INTO storage_fts_docs (id, key, doc, len, body) VALUES (?, ?, ?, ?, ?)"
# FTS5 from the rows just written (one statement; rowids ascending, one segment per commit)
_INDEX = "INSERT INTO storage_fts_text (rowid, body) SELECT id, body FROM storage_fts_docs "
_SCORE = (
    f"round(sum(q.idf * (h.tf * {fts.K1 + 1}) / (h.tf + {fts.K1} * (1 - {fts.B} "
    f"+ {fts.B} * d.len / ?))), {fts.SCORE_DIGITS})"
)


class Runner(Protocol):
    """What the index needs of `SqliteDatabase`: jobs on a reader or the writer."""

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T: ...

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T: ...


def _missing(exc: sqlite3.OperationalError) -> bool:
    return "no such table" in str(exc)


def _marks(n: int) -> str:
    return ", ".join("?" * n)


def _atomic(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    """`fn(conn)` inside the caller's transaction, or in one of its own."""
    if conn.in_transaction:
        return fn(conn)
    conn.execute("BEGIN IMMEDIATE")
    try:
        got = fn(conn)
        conn.execute("COMMIT")
        return got
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _insert_all(
    conn: sqlite3.Connection, name: str, tenant: str, docs: Sequence[tuple[int, str]]
) -> None:
    """The documents' rows and their FTS5 entries; the pair's counts (its key made when
    new)."""
    found = [(doc, fts.terms(text)) for doc, text in docs]
    total = sum(len(t) for _, t in found)
    key = int(conn.execute(_COUNT_IN, (name, tenant, len(found), total)).fetchone()[0])
    first = int(conn.execute("SELECT coalesce(max(id), 0) + 1 FROM storage_fts_docs").fetchone()[0])
    rows = [
        (first + i, key, doc, len(t), " ".join(f"{key}_{x}" for x in t))
        for i, (doc, t) in enumerate(found)
    ]
    conn.executemany(_INSERT, rows)
    conn.execute(_INDEX + "WHERE id >= ?", (first,))


class SqliteTextIndex:
    def __init__(self, db: Runner, name: str, tenant: str) -> None:
        self._db, self.name, self.tenant = db, name, tenant

    def _key(self, conn: sqlite3.Connection) -> int | None:
        row = conn.execute(_KEY, (self.name, self.tenant)).fetchone()
        return None if row is None else int(row[0])

    async def _read(self, fn: Callable[[sqlite3.Connection, int], T], empty: T) -> T:
        """`fn(conn, key)` on a reader; `empty` when the pair has no key (never written)."""

        def job(conn: sqlite3.Connection) -> T:
            try:
                key = self._key(conn)
                return empty if key is None else fn(conn, key)
            except sqlite3.OperationalError as exc:
                if _missing(exc):  # not migrated: nothing was ever written
                    return empty
                raise

        return await self._db.read(job)

    async def add(self, doc: int, text: str) -> None:
        await self._add([(doc, text)])

    async def add_many(self, docs: Sequence[tuple[int, str]]) -> None:
        await self._add(docs)

    async def _add(self, docs: Sequence[tuple[int, str]]) -> None:
        if not docs:
            return
        name, tenant = self.name, self.tenant
        # one transaction (FTS5 flushes one segment per commit: one per row made a segment
        # per row, and merges to match)
        await self._db.write(lambda c: _atomic(c, lambda c: _insert_all(c, name, tenant, docs)))

    async def remove(self, doc: int) -> bool:
        sql = f"DELETE FROM storage_fts_docs WHERE key = ({_KEY}) AND doc = ?"

        def job(conn: sqlite3.Connection) -> bool:
            try:
                cur = conn.execute(sql, (self.name, self.tenant, doc))
            except sqlite3.OperationalError as exc:
                if _missing(exc):
                    return False
                raise
            return cur.rowcount > 0

        return await self._db.write(job)

    async def search(
        self, query: Sequence[str], limit: int, *, min_doc: int | None = None
    ) -> list[tuple[int, float]]:
        terms = fts.query_terms(query)
        if not terms or limit <= 0:
            return []
        low = -(2**63) if min_doc is None else min_doc

        def job(conn: sqlite3.Connection, key: int) -> list[tuple[int, float]]:
            docs, tokens = conn.execute(
                "SELECT docs, tokens FROM storage_fts_stats WHERE key = ?", (key,)
            ).fetchone()
            freq = _freqs(conn, key, terms)
            idf = [
                (f"{key}_{t}", max(math.log((docs - n + 0.5) / (n + 0.5)), fts.IDF_FLOOR))
                for t, n in freq.items()
                if n > 0
            ]
            if not idf:
                return []
            avgdl = tokens / max(docs, 1)
            if min_doc is not None:
                return _newest_scored(conn, key, idf, avgdl, min_doc, limit)
            sql = (
                f"WITH q(term, idf) AS (VALUES {_marks_pairs(len(idf))}) "
                f"SELECT d.doc, {_SCORE} AS s FROM ("
                "SELECT doc AS id, term, count(*) AS tf FROM storage_fts_hits "
                f"WHERE term IN ({_marks(len(idf))}) GROUP BY doc, term) h "
                "JOIN q ON q.term = h.term JOIN storage_fts_docs d ON d.id = h.id "
                "WHERE d.doc >= ? GROUP BY d.doc ORDER BY s DESC, d.doc LIMIT ?"
            )
            pairs = [x for pair in idf for x in pair]
            args = (*pairs, avgdl, *(t for t, _ in idf), low, limit)
            return [(int(d), float(s)) for d, s in conn.execute(sql, args).fetchall()]

        return await self._read(job, [])

    async def doc_freq(self, query: Sequence[str], cap: int) -> dict[str, int]:
        found = fts.query_terms(query)

        def job(conn: sqlite3.Connection, key: int) -> dict[str, int]:
            return {t: min(n, cap) for t, n in _freqs(conn, key, found).items()}

        return await self._read(job, dict.fromkeys(found, 0))

    async def nth_newest(self, query: Sequence[str], n: int) -> int | None:
        terms = fts.query_terms(query)
        if not terms or n <= 0:
            return None

        def job(conn: sqlite3.Connection, key: int) -> int | None:
            return _nth_newest(conn, key, fts.fts5_any([f"{key}_{t}" for t in terms]), n)

        return await self._read(job, None)

    async def count(self) -> int:
        sql = "SELECT docs FROM storage_fts_stats WHERE key = ?"
        return await self._read(lambda c, key: int(c.execute(sql, (key,)).fetchone()[0]), 0)

    async def drop(self) -> None:
        def drop(conn: sqlite3.Connection) -> None:
            key = self._key(conn)
            if key is not None:
                conn.execute("DELETE FROM storage_fts_docs WHERE key = ?", (key,))
                conn.execute("DELETE FROM storage_fts_stats WHERE key = ?", (key,))

        await self._db.write(lambda c: _atomic(c, drop))

    async def documents(self, after: int, limit: int) -> list[tuple[int, str]]:
        sql = (
            "SELECT doc, body FROM storage_fts_docs WHERE key = ? AND doc > ? ORDER BY doc LIMIT ?"
        )

        def job(conn: sqlite3.Connection, key: int) -> list[tuple[int, str]]:
            rows = conn.execute(sql, (key, after, limit)).fetchall()
            return [(int(d), _unprefixed(str(b))) for d, b in rows]

        return await self._read(job, [])


def _newest_scored(
    conn: sqlite3.Connection,
    key: int,
    idf: Sequence[tuple[str, float]],
    avgdl: float,
    min_doc: int,
    limit: int,
) -> list[tuple[int, float]]:
    """`search` from `min_doc` on: the matches come from FTS5 MATCH with a rowid floor
    (FTS5 seeks there: the work is the newest matches', not every posting's, as
    fts5vocab 'instance' would read), each one's tf counted in its body here."""
    floor = conn.execute(
        "SELECT min(id) FROM storage_fts_docs WHERE key = ? AND doc >= ?", (key, min_doc)
    ).fetchone()[0]
    if floor is None:
        return []
    # every doc >= min_doc has a rowid >= the least of theirs (the newest when rowids grow)
    sql = (
        "SELECT d.doc, d.len, d.body FROM (SELECT rowid AS id FROM storage_fts_text "
        "WHERE storage_fts_text MATCH ? AND rowid >= ?) m "
        "CROSS JOIN storage_fts_docs d ON d.id = m.id WHERE d.doc >= ?"
    )
    rows = conn.execute(sql, (fts.fts5_any([t for t, _ in idf]), floor, min_doc)).fetchall()
    # every term of a body is "{key}_{word}" (one `_`, the same key): "{key}_{word} " in
    # the body plus a space is found at the start of that word's occurrences only
    needles = [(f"{t} ", weight) for t, weight in idf]
    found = ((doc, length, body + " ") for doc, length, body in rows)
    return fts.top_scored(found, needles, avgdl, limit)


def _nth_newest(conn: sqlite3.Connection, key: int, expr: str, n: int) -> int | None:
    """The n-th largest doc matching `expr`. Rowids grow with each insert, so the n
    newest rowids of the matches (FTS5 reads them backwards and stops) are the n
    newest docs unless an older rowid holds a larger doc (an add out of doc order):
    checked on the docs index, else all the matches are sorted."""
    newest = (
        "SELECT min(d.doc), min(d.id), count(*) FROM (SELECT rowid AS id FROM storage_fts_text "
        "WHERE storage_fts_text MATCH ? ORDER BY rowid DESC LIMIT ?) m "
        "CROSS JOIN storage_fts_docs d ON d.id = m.id"
    )
    low, floor, found = conn.execute(newest, (expr, n)).fetchone()
    if found < n:
        return None
    later = "SELECT 1 FROM storage_fts_docs WHERE key = ? AND doc > ? AND id < ? LIMIT 1"
    if conn.execute(later, (key, low, floor)).fetchone() is None:
        return int(low)
    sql = (
        "SELECT d.doc FROM storage_fts_docs d WHERE d.id IN (SELECT rowid "
        "FROM storage_fts_text WHERE storage_fts_text MATCH ?) "
        "ORDER BY d.doc DESC LIMIT 1 OFFSET ?"
    )
    row = conn.execute(sql, (expr, n - 1)).fetchone()
    return None if row is None else int(row[0])


def _marks_pairs(n: int) -> str:
    return ", ".join(["(?, ?)"] * n)


def _unprefixed(body: str) -> str:
    return " ".join(t.partition("_")[2] for t in body.split())


def _freqs(conn: sqlite3.Connection, key: int, terms: Sequence[str]) -> dict[str, int]:
    """Per term, how many of the key's documents hold it (fts5vocab 'row' of the prefixed term)."""
    found = dict.fromkeys(terms, 0)
    if not terms:
        return found
    prefix = f"{key}_"
    sql = f"SELECT term, doc FROM storage_fts_terms WHERE term IN ({_marks(len(terms))})"
    for term, n in conn.execute(sql, [prefix + t for t in terms]):
        found[str(term)[len(prefix) :]] = int(n)
    return found


def upgrade(conn: sqlite3.Connection) -> int:
    """Move every per-(index, tenant) FTS5 table of the old layout (listed in
    `storage_fts`) into the shared tables, drop them and the list; inside the caller's
    transaction. The number of tables moved."""
    listed = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'storage_fts'"
    ).fetchone()
    if listed is None:
        return 0
    old = conn.execute("SELECT tbl, name, tenant FROM storage_fts ORDER BY tbl").fetchall()
    for tbl, name, tenant in old:
        exists = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (tbl,)
        ).fetchone()
        if exists is None:
            continue
        # the old bodies are the terms joined by spaces: `add` of them gives the same terms
        docs = conn.execute(f'SELECT rowid, body FROM "{tbl}" ORDER BY rowid').fetchall()
        _insert_all(conn, str(name), str(tenant), [(int(d), str(b)) for d, b in docs])
        conn.execute(f'DROP TABLE "{tbl}"')
    conn.execute("DROP TABLE storage_fts")
    return len(old)
