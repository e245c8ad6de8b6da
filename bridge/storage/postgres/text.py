"""PostgreSQL's text index: rows of `storage_fts_docs`, BM25 computed in SQL.

A document is (index, tenant, doc): its distinct terms and how often each
occurs (`terms`, `tfs`), its length, and `tsv = array_to_tsvector(terms)`
under a GIN index for the match. `storage_fts_stats` keeps the tenant's
document and term totals, updated in the same statement as the document.
A search matches with a tsquery of quoted lexemes (`fts.tsquery_any`: no
parser, no dictionary: the terms as they are) and ranks with the formula of
`bridge.storage.fts`, so the scores equal SQLite FTS5's `bm25()`.
"""

from __future__ import annotations

from collections.abc import Sequence

from bridge.storage import fts, units
from bridge.storage.protocol import Database
from bridge.storage.units import Unit

_ADD = """
WITH ins AS (
    INSERT INTO storage_fts_docs (name, tenant, doc, len, terms, tfs, tsv)
    VALUES (:name, :tenant, :doc, :len, CAST(:terms AS TEXT[]), CAST(:tfs AS INTEGER[]),
            array_to_tsvector(CAST(:terms AS TEXT[])))
    RETURNING len)
INSERT INTO storage_fts_stats (name, tenant, docs, tokens)
SELECT :name, :tenant, 1, len FROM ins
ON CONFLICT (name, tenant) DO UPDATE SET docs = storage_fts_stats.docs + 1,
    tokens = storage_fts_stats.tokens + excluded.tokens
"""
_REMOVE = """
WITH del AS (
    DELETE FROM storage_fts_docs WHERE name = :name AND tenant = :tenant AND doc = :doc
    RETURNING len)
UPDATE storage_fts_stats s SET docs = s.docs - 1, tokens = s.tokens - del.len
FROM del WHERE s.name = :name AND s.tenant = :tenant
"""
_MATCH = "d.name = :name AND d.tenant = :tenant AND d.tsv @@ CAST(:q AS tsquery)"
_SEARCH = f"""
WITH st AS (
    SELECT CAST(docs AS DOUBLE PRECISION) AS n,
        CAST(tokens AS DOUBLE PRECISION) / GREATEST(docs, 1) AS avgdl
    FROM storage_fts_stats WHERE name = :name AND tenant = :tenant),
q AS (
    SELECT t.term,
        GREATEST(ln((st.n - df.c + 0.5) / (df.c + 0.5)), {fts.IDF_FLOOR}) AS idf
    FROM unnest(CAST(:terms AS TEXT[]), CAST(:lits AS TEXT[])) AS t(term, lit)
    CROSS JOIN st
    CROSS JOIN LATERAL (
        SELECT CAST(count(*) AS DOUBLE PRECISION) AS c FROM storage_fts_docs d
        WHERE d.name = :name AND d.tenant = :tenant AND d.tsv @@ CAST(t.lit AS tsquery)) df),
hits AS (
    SELECT d.doc, CAST(d.len AS DOUBLE PRECISION) AS len, d.terms, d.tfs
    FROM storage_fts_docs d
    WHERE {_MATCH} AND d.doc >= :min_doc)
SELECT h.doc, round(CAST(sum(q.idf * (u.tf * {fts.K1 + 1}) / (u.tf + {fts.K1} * (1 - {fts.B}
        + {fts.B} * h.len / st.avgdl))) AS NUMERIC), {fts.SCORE_DIGITS}) AS s
FROM hits h CROSS JOIN st
CROSS JOIN LATERAL (
    SELECT x.term, CAST(x.tf AS DOUBLE PRECISION) AS tf
    FROM unnest(h.terms, h.tfs) AS x(term, tf)) u
JOIN q ON q.term = u.term
GROUP BY h.doc ORDER BY s DESC, h.doc LIMIT :limit
"""
_FREQ = f"SELECT count(*) FROM (SELECT 1 FROM storage_fts_docs d WHERE {_MATCH} LIMIT :cap) x"
_NEWEST = (
    f"SELECT d.doc FROM storage_fts_docs d WHERE {_MATCH} ORDER BY d.doc DESC LIMIT 1 OFFSET :skip"
)
MIN_DOC = -(2**63)


class PostgresTextIndex:
    def __init__(self, db: Database, name: str, tenant: str) -> None:
        self._db, self.name, self.tenant = db, name, tenant
        self._key = {"name": name, "tenant": tenant}

    async def add(self, doc: int, text: str) -> None:
        terms, tfs, total = fts.counted(text)
        await self._db.execute(
            _ADD, {**self._key, "doc": doc, "len": total, "terms": terms, "tfs": tfs}
        )

    async def add_many(self, docs: Sequence[tuple[int, str]]) -> None:
        rows = self._rows(docs)
        if rows:
            await self._db.execute_many(_ADD, rows)

    def adding(self, docs: Sequence[tuple[int, str]]) -> Unit[None]:
        rows = self._rows(docs)
        if rows:
            yield units.execute_many(_ADD, rows)

    def _rows(self, docs: Sequence[tuple[int, str]]) -> list[dict[str, object]]:
        rows = []
        for doc, text in docs:
            terms, tfs, total = fts.counted(text)
            rows.append({**self._key, "doc": doc, "len": total, "terms": terms, "tfs": tfs})
        return rows

    async def remove(self, doc: int) -> bool:
        return await self._db.execute(_REMOVE, {**self._key, "doc": doc}) > 0

    async def search(
        self, query: Sequence[str], limit: int, *, min_doc: int | None = None
    ) -> list[tuple[int, float]]:
        terms = fts.query_terms(query)
        if not terms or limit <= 0:
            return []
        rows = await self._db.fetch_all(
            _SEARCH,
            {
                **self._key,
                "terms": terms,
                "lits": [fts.tsquery_lexeme(t) for t in terms],
                "q": fts.tsquery_any(terms),
                "min_doc": MIN_DOC if min_doc is None else min_doc,
                "limit": limit,
            },
        )
        return [(int(d), float(s)) for d, s in rows]

    async def doc_freq(self, query: Sequence[str], cap: int) -> dict[str, int]:
        found: dict[str, int] = {}
        for term in fts.query_terms(query):
            args = {**self._key, "q": fts.tsquery_lexeme(term), "cap": cap}
            found[term] = int(await self._db.fetch_value(_FREQ, args))
        return found

    async def nth_newest(self, query: Sequence[str], n: int) -> int | None:
        terms = fts.query_terms(query)
        if not terms or n <= 0:
            return None
        args = {**self._key, "q": fts.tsquery_any(terms), "skip": n - 1}
        got = await self._db.fetch_value(_NEWEST, args)
        return None if got is None else int(got)

    async def count(self) -> int:
        got = await self._db.fetch_value(
            "SELECT docs FROM storage_fts_stats WHERE name = :name AND tenant = :tenant", self._key
        )
        return int(got or 0)

    async def count_with(self, sql: str, params: Sequence[object]) -> tuple[int, int]:
        row = await self._db.fetch_one(
            "SELECT coalesce((SELECT docs FROM storage_fts_stats WHERE name = ? AND tenant = ?), "
            f"0), ({sql})",
            (self.name, self.tenant, *params),
        )
        docs, value = row if row is not None else (0, 0)
        return int(docs), int(value or 0)

    async def drop(self) -> None:
        async with self._db.transaction():
            where = "WHERE name = :name AND tenant = :tenant"
            await self._db.execute(f"DELETE FROM storage_fts_docs {where}", self._key)
            await self._db.execute(f"DELETE FROM storage_fts_stats {where}", self._key)

    async def documents(self, after: int, limit: int) -> list[tuple[int, str]]:
        rows = await self._db.fetch_all(
            "SELECT doc, terms, tfs FROM storage_fts_docs WHERE name = :name AND tenant = :tenant "
            "AND doc > :after ORDER BY doc LIMIT :limit",
            {**self._key, "after": after, "limit": limit},
        )
        # the terms with their counts (BM25 and `fts.counted` see the same document)
        return [
            (int(d), " ".join(t for t, n in zip(terms, tfs, strict=True) for _ in range(n)))
            for d, terms, tfs in rows
        ]
