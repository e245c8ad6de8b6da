"""SQLite's text index: per-tenant postings in plain tables, BM25 from the tenant's counts.

An (index, tenant) pair is a row of `storage_fts_stats`: its integer `key`,
its number of documents and of terms. A document is a row of
`storage_fts_docs` (key, doc, length, body: its terms, `bridge.storage.fts.terms`,
joined by spaces). Each (key, term, doc) it holds is a row of
`storage_fts_postings` with the term's frequency in it and the document's
length, and each (key, term) a row of `storage_fts_df` with how many of the
key's documents hold it. Both are WITHOUT ROWID tables keyed in that order,
so a term's postings are the tenant's own and sorted by doc: a match is a
range read, and the schema does not grow with the tenants (one FTS5 table per
tenant made every connection re-parse a schema that grew by ~6 tables per new
tenant).

Ranking: the formula of `bridge.storage.fts` in SQL, as the PostgreSQL
backend computes it: N and the average length from the tenant's stats, each
term's document frequency from `storage_fts_df`, tf and length from the
postings, read from `min_doc` on when given (recall scores only the newest
matches), so the work is the matched postings' only. `nth_newest` merges
the terms' postings backwards (a UNION with ORDER BY: SQLite merges the
sorted ranges and stops at the n-th). The job that inserts documents writes
their rows, postings and counts in one transaction (`add_many`: its own;
`adding`: the same steps inside the caller's unit, committed with its rows); a trigger on a
document's delete removes its postings and uncounts them (one statement: a
removal never opens a transaction of its own). The price is on the write
side: a row per distinct term and an upsert per term for each document
(FTS5 wrote one segment per transaction), several times FTS5's time per
add. `bench.fts_layout` compares both with the per-tenant FTS5 layout.

`upgrade` moves a home of either earlier layout into this one and drops its
tables: one FTS5 table per pair (listed in `storage_fts`), or the shared
contentless FTS5 table `storage_fts_text` (terms prefixed by the key).
"""

from __future__ import annotations

import math
import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import chain
from typing import Protocol, TypeVar

from bridge.storage import fts, units
from bridge.storage.sqlite.steps import run_steps
from bridge.storage.units import Unit

T = TypeVar("T")

# a body as a JSON array of its terms: the terms hold no `"`, `\`, space or control
# character, so quoting each is enough (an empty body gives [""], which matches nothing)
_BODY_TERMS = "json_each('[\"' || replace(old.body, ' ', '\",\"') || '\"]')"
TABLES = (
    "CREATE TABLE IF NOT EXISTS storage_fts_stats (key INTEGER PRIMARY KEY, "
    "name TEXT NOT NULL, tenant TEXT NOT NULL, docs INTEGER NOT NULL, "
    "tokens INTEGER NOT NULL, UNIQUE (name, tenant))",
    "CREATE TABLE IF NOT EXISTS storage_fts_docs (id INTEGER PRIMARY KEY, "
    "key INTEGER NOT NULL, doc INTEGER NOT NULL, len INTEGER NOT NULL, body TEXT NOT NULL, "
    "UNIQUE (key, doc))",
    "CREATE TABLE IF NOT EXISTS storage_fts_postings (key INTEGER NOT NULL, "
    "term TEXT NOT NULL, doc INTEGER NOT NULL, tf INTEGER NOT NULL, len INTEGER NOT NULL, "
    "PRIMARY KEY (key, term, doc)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS storage_fts_df (key INTEGER NOT NULL, term TEXT NOT NULL, "
    "n INTEGER NOT NULL, PRIMARY KEY (key, term)) WITHOUT ROWID",
    "CREATE TRIGGER IF NOT EXISTS storage_fts_docs_removed AFTER DELETE ON storage_fts_docs "
    "BEGIN "
    "DELETE FROM storage_fts_postings WHERE key = old.key AND doc = old.doc "
    f"AND term IN (SELECT value FROM {_BODY_TERMS}); "
    "UPDATE storage_fts_df SET n = n - 1 WHERE key = old.key "
    f"AND term IN (SELECT value FROM {_BODY_TERMS}); "
    "DELETE FROM storage_fts_df WHERE key = old.key AND n <= 0 "
    f"AND term IN (SELECT value FROM {_BODY_TERMS}); "
    "UPDATE storage_fts_stats SET docs = docs - 1, tokens = tokens - old.len "
    "WHERE key = old.key; END",
)
_KEY = "SELECT key FROM storage_fts_stats WHERE name = ? AND tenant = ?"
_STATS = "SELECT key, docs, tokens FROM storage_fts_stats WHERE name = ? AND tenant = ?"
_COUNT_IN = (
    "INSERT INTO storage_fts_stats (name, tenant, docs, tokens) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (name, tenant) DO UPDATE SET docs = docs + excluded.docs, "
    "tokens = tokens + excluded.tokens RETURNING key"
)
# a batch's documents, postings and counts: multi-row INSERTs of fixed texts (one
# `json_each` statement with `->>` per column cost 2-3x as much per row on SQLite 3.40:
# 0.43-0.54 against 0.14-0.20 ms for a pair's 33 postings): ROWS rows at a time while
# ROWS are left, the rest by one statement per power of two (`_rows`)
ROWS = 32  # documents, postings, counts written by one multi-row INSERT at most
_INSERT = "INSERT INTO storage_fts_docs (key, doc, len, body) VALUES (?, ?, ?, ?)"
_POST = "INSERT INTO storage_fts_postings (key, term, doc, tf, len) VALUES (?, ?, ?, ?, ?)"
_DF = (
    "INSERT INTO storage_fts_df (key, term, n) VALUES (?, ?, ?) "
    "ON CONFLICT (key, term) DO UPDATE SET n = n + excluded.n"
)
_SCORE = (
    f"round(sum(q.idf * (p.tf * {fts.K1 + 1}) / (p.tf + {fts.K1} * (1 - {fts.B} "
    f"+ {fts.B} * p.len / ?))), {fts.SCORE_DIGITS})"
)
# the earlier shared layout's FTS5 tables and trigger (dropped by `upgrade`)
_SHARED = ("storage_fts_hits", "storage_fts_terms", "storage_fts_text")


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
    """The documents' rows, postings and counts; the pair's counts (its key made when
    new)."""
    run_steps(conn, adding(name, tenant, docs))


def adding(name: str, tenant: str, docs: Sequence[tuple[int, str]]) -> Unit[None]:
    """The steps of `_insert_all` (a unit's part: they commit with whatever the caller's
    unit writes beside them, or not at all)."""
    found = [(doc, fts.terms(text)) for doc, text in docs]
    total = sum(len(t) for _, t in found)
    row = yield units.fetch_one(_COUNT_IN, (name, tenant, len(found), total))
    key = int(row[0])
    yield from _rows(_INSERT, [(key, doc, len(t), " ".join(t)) for doc, t in found])
    yield from _posting(key, found)


def _post(conn: sqlite3.Connection, key: int, found: Sequence[tuple[int, list[str]]]) -> None:
    """The postings of documents (doc, terms) of `key` and their document frequencies."""
    run_steps(conn, _posting(key, found))


def _posting(key: int, found: Sequence[tuple[int, list[str]]]) -> Unit[None]:
    """The steps of `_post`."""
    postings, held = _postings(key, found)
    yield from _rows(_POST, postings)
    yield from _rows(_DF, held)


def _postings(
    key: int, found: Sequence[tuple[int, list[str]]]
) -> tuple[list[tuple[int, str, int, int, int]], list[tuple[int, str, int]]]:
    """The postings rows of documents (doc, terms) of `key`, and the rows of their terms'
    document frequencies, both in key order (a batch appends to the b-trees instead of
    scattering): grouped by term, the distinct terms sorted, each term's rows in doc
    order (the documents taken by doc). Sorting the postings' 5-tuples instead compared
    key and term again for every pair: 1.8x the time of this for a turn batch."""
    by_term: dict[str, list[tuple[int, str, int, int, int]]] = {}
    for doc, terms in sorted(found, key=_doc):
        n = len(terms)
        tfs = dict.fromkeys(terms, 1)
        if len(tfs) < n:  # a term twice: count them (most documents hold each once)
            tfs = Counter(terms)
        for term, tf in tfs.items():
            rows = by_term.get(term)
            if rows is None:
                by_term[term] = [(key, term, doc, tf, n)]
            else:
                rows.append((key, term, doc, tf, n))
    postings: list[tuple[int, str, int, int, int]] = []
    held: list[tuple[int, str, int]] = []
    for term in sorted(by_term):
        rows = by_term[term]
        postings += rows
        held.append((key, term, len(rows)))
    return postings, held


def _doc(item: tuple[int, list[str]]) -> int:
    return item[0]


@lru_cache(maxsize=32)
def _rows_of(one: str, size: int) -> str:
    """The single-row INSERT `one` (its one `VALUES (...)`, then any `ON CONFLICT ...`) as
    one of `size` rows."""
    head, _, rest = one.partition(" VALUES ")
    end = rest.index(")") + 1
    return f"{head} VALUES {', '.join([rest[:end]] * size)}{rest[end:]}"


def _rows(one: str, rows: Sequence[tuple[object, ...]]) -> Unit[None]:
    """`one` (a single-row INSERT ... VALUES (...), perhaps ON CONFLICT ...) for every
    row, in order: ROWS at a time by a statement of ROWS rows, the rest (fewer than ROWS)
    by one statement per power of two in it, largest first (21 rows: 16, 4, 1). Each
    statement is one step of SQLite, and one release of the GIL by the writer's thread,
    instead of one a row: a busy event loop keeps the GIL up to its switch interval
    before the writer gets it back, and a turn's end unit queued behind the batch waits
    for each. Their texts are one of a few (log2(ROWS) + 1 per table), prepared once."""
    whole = len(rows) - len(rows) % ROWS
    if whole:
        chunks = [tuple(chain.from_iterable(rows[i : i + ROWS])) for i in range(0, whole, ROWS)]
        yield units.execute_many(_rows_of(one, ROWS), chunks)
    size = ROWS // 2
    while whole < len(rows):
        if len(rows) - whole >= size:
            part = tuple(chain.from_iterable(rows[whole : whole + size]))
            yield units.execute(_rows_of(one, size) if size > 1 else one, part)
            whole += size
        size //= 2


class SqliteTextIndex:
    def __init__(self, db: Runner, name: str, tenant: str) -> None:
        self._db, self.name, self.tenant = db, name, tenant

    def _key(self, conn: sqlite3.Connection) -> int | None:
        row = conn.execute(_KEY, (self.name, self.tenant)).fetchone()
        return None if row is None else int(row[0])

    async def _read(self, fn: Callable[[sqlite3.Connection, int], T], empty: T) -> T:
        """`fn(conn, key)` on a reader; `empty` when the pair has no key (never written)."""
        return await self._read_stats(lambda conn, key, _docs, _tokens: fn(conn, key), empty)

    async def _read_stats(
        self, fn: Callable[[sqlite3.Connection, int, int, int], T], empty: T
    ) -> T:
        """`fn(conn, key, docs, tokens)` on a reader, the pair's stats read in one
        statement; `empty` when the pair has no key (never written)."""

        def job(conn: sqlite3.Connection) -> T:
            try:
                row = conn.execute(_STATS, (self.name, self.tenant)).fetchone()
                return empty if row is None else fn(conn, int(row[0]), int(row[1]), int(row[2]))
            except sqlite3.OperationalError as exc:
                if _missing(exc):  # not migrated: nothing was ever written
                    return empty
                raise

        return await self._db.read(job)

    async def add(self, doc: int, text: str) -> None:
        await self._add([(doc, text)])

    async def add_many(self, docs: Sequence[tuple[int, str]]) -> None:
        await self._add(docs)

    def adding(self, docs: Sequence[tuple[int, str]]) -> Unit[None]:
        return adding(self.name, self.tenant, docs)

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

        def job(
            conn: sqlite3.Connection, key: int, docs: int, tokens: int
        ) -> list[tuple[int, float]]:
            idf = [
                (t, max(math.log((docs - n + 0.5) / (n + 0.5)), fts.IDF_FLOOR))
                for t, n in _freqs(conn, key, terms).items()
                if n > 0
            ]
            if not idf:
                return []
            # the query's terms first, each one's postings from `low` on (a range of the key)
            sql = (
                f"WITH q(term, idf) AS (VALUES {_marks_pairs(len(idf))}) "
                f"SELECT p.doc, {_SCORE} AS s FROM q CROSS JOIN storage_fts_postings p "
                "ON p.key = ? AND p.term = q.term AND p.doc >= ? "
                "GROUP BY p.doc ORDER BY s DESC, p.doc LIMIT ?"
            )
            pairs = [x for pair in idf for x in pair]
            args = (*pairs, tokens / max(docs, 1), key, low, limit)
            return [(int(d), float(s)) for d, s in conn.execute(sql, args).fetchall()]

        return await self._read_stats(job, [])

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
            # one arm per term, each read backwards on the postings' key; the UNION's ORDER BY
            # merges them (no sort) and stops at the n-th distinct doc
            arms = " UNION ".join(
                ["SELECT doc FROM storage_fts_postings WHERE key = ? AND term = ?"] * len(terms)
            )
            sql = f"{arms} ORDER BY 1 DESC LIMIT 1 OFFSET ?"
            args = [x for t in terms for x in (key, t)]
            row = conn.execute(sql, (*args, n - 1)).fetchone()
            return None if row is None else int(row[0])

        return await self._read(job, None)

    async def count(self) -> int:
        return await self._read_stats(lambda _conn, _key, docs, _tokens: docs, 0)

    async def count_with(self, sql: str, params: Sequence[object]) -> tuple[int, int]:
        both = (
            "SELECT coalesce((SELECT docs FROM storage_fts_stats WHERE name = ? AND tenant = ?), "
            f"0), ({sql})"
        )

        def job(conn: sqlite3.Connection) -> tuple[int, int]:
            try:
                docs, value = conn.execute(both, (self.name, self.tenant, *params)).fetchone()
            except sqlite3.OperationalError as exc:
                if _missing(exc):  # not migrated: nothing was ever written
                    return 0, 0
                raise
            return int(docs), int(value or 0)

        return await self._db.read(job)

    async def drop(self) -> None:
        def drop(conn: sqlite3.Connection) -> None:
            key = self._key(conn)
            if key is not None:  # postings and counts first: the trigger then finds none
                conn.execute("DELETE FROM storage_fts_postings WHERE key = ?", (key,))
                conn.execute("DELETE FROM storage_fts_df WHERE key = ?", (key,))
                conn.execute("DELETE FROM storage_fts_docs WHERE key = ?", (key,))
                conn.execute("DELETE FROM storage_fts_stats WHERE key = ?", (key,))

        await self._db.write(lambda c: _atomic(c, drop))

    async def documents(self, after: int, limit: int) -> list[tuple[int, str]]:
        sql = (
            "SELECT doc, body FROM storage_fts_docs WHERE key = ? AND doc > ? ORDER BY doc LIMIT ?"
        )

        def job(conn: sqlite3.Connection, key: int) -> list[tuple[int, str]]:
            return [(int(d), str(b)) for d, b in conn.execute(sql, (key, after, limit))]

        return await self._read(job, [])


def _marks_pairs(n: int) -> str:
    return ", ".join(["(?, ?)"] * n)


def _freqs(conn: sqlite3.Connection, key: int, terms: Sequence[str]) -> dict[str, int]:
    """Per term, how many of the key's documents hold it."""
    found = dict.fromkeys(terms, 0)
    if not terms:
        return found
    sql = f"SELECT term, n FROM storage_fts_df WHERE key = ? AND term IN ({_marks(len(terms))})"
    for term, n in conn.execute(sql, (key, *terms)):
        found[str(term)] = int(n)
    return found


def _exists(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone()
    return row is not None


def upgrade(conn: sqlite3.Connection) -> int:
    """Move a home of an earlier layout into this one, inside the caller's transaction:
    the shared FTS5 table's documents (their bodies unprefixed, their postings and counts
    made; the stats are kept), then every per-(index, tenant) FTS5 table (listed in
    `storage_fts`); their tables dropped. The number of (index, tenant) pairs moved."""
    return _upgrade_shared(conn) + _upgrade_per_tenant(conn)


def _upgrade_shared(conn: sqlite3.Connection) -> int:
    if not _exists(conn, "storage_fts_text"):
        return 0
    conn.execute("DROP TRIGGER IF EXISTS storage_fts_docs_gone")  # it wrote to storage_fts_text
    rows = conn.execute("SELECT id, key, doc, body FROM storage_fts_docs ORDER BY key, id")
    by_key: dict[int, list[tuple[int, list[str]]]] = {}
    bodies = []
    for ident, key, doc, body in rows.fetchall():
        terms = [t.partition("_")[2] for t in str(body).split()]  # "{key}_{term}"
        by_key.setdefault(int(key), []).append((int(doc), terms))
        bodies.append((" ".join(terms), ident))
    conn.executemany("UPDATE storage_fts_docs SET body = ? WHERE id = ?", bodies)
    for key, found in by_key.items():
        _post(conn, key, found)
    for table in _SHARED:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    return len(by_key)


def _upgrade_per_tenant(conn: sqlite3.Connection) -> int:
    if not _exists(conn, "storage_fts"):
        return 0
    old = conn.execute("SELECT tbl, name, tenant FROM storage_fts ORDER BY tbl").fetchall()
    for tbl, name, tenant in old:
        if not _exists(conn, str(tbl)):
            continue
        # the old bodies are the terms joined by spaces: `add` of them gives the same terms
        docs = conn.execute(f'SELECT rowid, body FROM "{tbl}" ORDER BY rowid').fetchall()
        _insert_all(conn, str(name), str(tenant), [(int(d), str(b)) for d, b in docs])
        conn.execute(f'DROP TABLE "{tbl}"')
    conn.execute("DROP TABLE storage_fts")
    return len(old)
