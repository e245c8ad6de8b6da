"""SQLite text index layouts, one search's latency: per-tenant FTS5 tables vs one shared table.

Old (the baseline, kept only here): one FTS5 table per (index, tenant),
ranked by FTS5's own `bm25()` (the code of commit c7ec46c). New:
`bridge.storage.sqlite.text.SqliteTextIndex` (one shared FTS5 table,
BM25 per tenant in SQL). Both are built once per scale (each in its own
file), then searched through the SAME path, twice: a raw `sqlite3`
connection on the calling thread, and `SqliteDatabase` (its reader
threads). Scales: 1 tenant x 500 / 5,000 / 20,000 documents and 1,000
tenants x 200 (`--quick`, for CI: 1 x 500 and 20 x 50). Documents are 4-30
words drawn from a made-up vocabulary of 30,000 words with a Zipf
distribution (rank r has weight 1/r); queries are 3 words, "common" from
the 50 most frequent, "rare" from ranks 2,000-20,000. Old and new take turns
query by query (a busy machine slows both alike). Kind "newest": the common
queries as bridge.recall.search runs them (`nth_newest` of 2,000 matches, then
`search` from that document on: only the newest matches scored), both calls
timed. Kind "add": one `add_many` of a turn's pair (two new documents of a
tenant), after the searches. p50/p99 in ms of wall time
and the ratio new/old of the p50s. The two must rank alike (checked on every
query: same documents, scores within 1e-6).

Run: .venv/bin/python -m bench.fts_layout [--quick] [--queries 200] [--limit 50]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from bridge.storage import fts
from bridge.storage.sqlite import SqliteDatabase
from bridge.storage.sqlite.text import TABLES, Runner, SqliteTextIndex

T = TypeVar("T")
VOCAB = 30_000
NAME = "recall"
POSTINGS = 2_000  # bridge.recall.search.Tuning.postings
BOUNDED = "newest"  # the common queries, recall-shaped: only the newest POSTINGS matches
ADD = "add"  # a turn's pair of new documents written (after the searches)


class Index(Protocol):
    async def add_many(self, docs: Sequence[tuple[int, str]]) -> None: ...

    async def search(
        self, query: Sequence[str], limit: int, *, min_doc: int | None = None
    ) -> list[tuple[int, float]]: ...

    async def nth_newest(self, query: Sequence[str], n: int) -> int | None: ...


class Raw:
    """A `Runner` on one plain connection, on the caller's thread (no hop: the floor)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return fn(self.conn)

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return fn(self.conn)


class OldIndex:
    """The baseline: c7ec46c's layout, one FTS5 table per (index, tenant), FTS5's bm25()."""

    def __init__(self, db: Runner, name: str, tenant: str) -> None:
        digest = hashlib.sha256(f"{name}\0{tenant}".encode()).hexdigest()[:24]
        self._db, self._table = db, f"storage_fts_{digest}"

    async def add_many(self, docs: Sequence[tuple[int, str]]) -> None:
        rows = [(doc, " ".join(fts.terms(text))) for doc, text in docs]
        t = self._table

        def job(conn: sqlite3.Connection) -> None:
            conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {t} USING fts5(body, tokenize=ascii)")
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(f"INSERT INTO {t} (rowid, body) VALUES (?, ?)", rows)
            conn.execute("COMMIT")

        await self._db.write(job)

    async def search(
        self, query: Sequence[str], limit: int, *, min_doc: int | None = None
    ) -> list[tuple[int, float]]:
        expr = fts.fts5_any(fts.query_terms(query))
        t = self._table
        where = "" if min_doc is None else " AND rowid >= ?"
        args: tuple[object, ...] = (expr,) + (() if min_doc is None else (min_doc,))
        sql = (
            f"SELECT rowid, round(-bm25({t}), {fts.SCORE_DIGITS}) AS s "
            f"FROM {t} WHERE {t} MATCH ?{where} ORDER BY s DESC, rowid LIMIT ?"
        )
        rows = await self._db.read(lambda c: c.execute(sql, (*args, limit)).fetchall())
        return [(int(d), float(s)) for d, s in rows]

    async def nth_newest(self, query: Sequence[str], n: int) -> int | None:
        expr = fts.fts5_any(fts.query_terms(query))
        t = self._table
        sql = f"SELECT rowid FROM {t} WHERE {t} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?"
        row = await self._db.read(lambda c: c.execute(sql, (expr, n - 1)).fetchone())
        return None if row is None else int(row[0])


Make = Callable[[Runner, str, str], Index]
LAYOUTS: dict[str, Make] = {"old": OldIndex, "new": SqliteTextIndex}


def vocabulary(rng: random.Random) -> list[str]:
    """VOCAB distinct made-up words of 2-4 syllables (no digits: real-ish terms)."""
    syll = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"]
    words: dict[str, None] = {}
    while len(words) < VOCAB:
        words.setdefault("".join(rng.choices(syll, k=rng.randint(2, 4))), None)
    return list(words)


def corpus(rng: random.Random, words: list[str], n: int) -> list[str]:
    cum = list(_zipf_cum())
    return [" ".join(rng.choices(words, cum_weights=cum, k=rng.randint(4, 30))) for _ in range(n)]


def _zipf_cum() -> list[float]:
    total, out = 0.0, []
    for r in range(1, VOCAB + 1):
        total += 1 / r
        out.append(total)
    return out


def queries(rng: random.Random, words: list[str], n: int) -> dict[str, list[list[str]]]:
    common = [rng.sample(words[:50], 3) for _ in range(n)]
    return {
        "common": common,
        "rare": [rng.sample(words[2000:20000], 3) for _ in range(n)],
        BOUNDED: common,
    }


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")  # as roost's engine: no fsync per commit
    return conn


async def build(path: Path, layout: str, tenants: int, docs: list[list[str]]) -> None:
    conn = connect(path)
    try:
        if layout == "new":
            for statement in TABLES:
                conn.execute(statement)
        raw = Raw(conn)
        for i in range(tenants):
            await LAYOUTS[layout](raw, NAME, f"t{i}").add_many(list(enumerate(docs[i], 1)))
    finally:
        conn.close()


def _pct(times: list[float]) -> tuple[float, float]:
    times = sorted(times)
    return statistics.median(times), times[max(int(len(times) * 0.99) - 1, 0)]


async def recall_shaped(index: Index, q: list[str], limit: int) -> list[tuple[int, float]]:
    """As bridge.recall.search scores: only the newest POSTINGS matches (`nth_newest`, then
    `search` from there)."""
    return await index.search(q, limit, min_doc=await index.nth_newest(q, POSTINGS))


async def measure(
    runners: dict[str, Runner], tenants: int, qs: list[list[str]], limit: int, bounded: bool
) -> dict[str, tuple[float, float]]:
    """Old and new in turn per query; (p50, p99) ms each. Checks they rank alike."""
    rng = random.Random(3)
    times: dict[str, list[float]] = {k: [] for k in runners}
    for q in qs:
        tenant = f"t{rng.randrange(tenants)}"
        got = {}
        for layout, runner in runners.items():
            index = LAYOUTS[layout](runner, NAME, tenant)
            start = time.perf_counter()
            if bounded:
                got[layout] = await recall_shaped(index, q, limit)
            else:
                got[layout] = await index.search(q, limit)
            times[layout].append((time.perf_counter() - start) * 1000)
        old, new = got["old"], got["new"]
        same = [d for d, _ in old] == [d for d, _ in new] and all(
            abs(a - b) < 1e-6 for (_, a), (_, b) in zip(old, new, strict=True)
        )
        if not same:
            raise SystemExit(f"old and new rank {q} differently: {old[:5]} vs {new[:5]}")
    return {k: _pct(v) for k, v in times.items()}


async def measure_adds(
    runners: dict[str, Runner], tenants: int, pairs: list[list[tuple[int, str]]]
) -> dict[str, tuple[float, float]]:
    """Old and new in turn per pair; (p50, p99) ms of one `add_many` of a turn's pair
    (two new documents of one tenant, one transaction each)."""
    rng = random.Random(5)
    times: dict[str, list[float]] = {k: [] for k in runners}
    for pair in pairs:
        tenant = f"t{rng.randrange(tenants)}"
        for layout, runner in runners.items():
            index = LAYOUTS[layout](runner, NAME, tenant)
            start = time.perf_counter()
            await index.add_many(pair)
            times[layout].append((time.perf_counter() - start) * 1000)
    return {k: _pct(v) for k, v in times.items()}


async def on_paths(
    paths: dict[str, Path],
    tenants: int,
    qs: dict[str, list[list[str]]],
    limit: int,
    pairs: dict[str, list[list[tuple[int, str]]]],
) -> list[tuple[str, str, dict[str, tuple[float, float]]]]:
    out = []
    conns = {k: connect(p) for k, p in paths.items()}
    try:
        raw: dict[str, Runner] = {k: Raw(c) for k, c in conns.items()}
        for kind, q in qs.items():
            out.append(("raw", kind, await measure(raw, tenants, q, limit, kind == BOUNDED)))
        out.append(("raw", ADD, await measure_adds(raw, tenants, pairs["raw"])))
    finally:
        for c in conns.values():
            c.close()
    dbs = {k: await SqliteDatabase.open(p) for k, p in paths.items()}
    try:
        runners: dict[str, Runner] = dict(dbs)
        for kind, q in qs.items():
            bounded = kind == BOUNDED
            out.append(("SqliteDatabase", kind, await measure(runners, tenants, q, limit, bounded)))
        out.append(("SqliteDatabase", ADD, await measure_adds(runners, tenants, pairs["db"])))
    finally:
        for db in dbs.values():
            await db.aclose()
    return out


async def scale(tenants: int, per: int, n_queries: int, limit: int) -> None:
    rng = random.Random(7)
    words = vocabulary(rng)
    docs = [corpus(rng, words, per) for _ in range(tenants)]
    qs = queries(rng, words, n_queries)
    texts = iter(corpus(rng, words, 4 * n_queries))
    ids = iter(range(per + 1, per + 1 + 4 * n_queries))  # after every built doc
    pairs = {
        path: [[(next(ids), next(texts)) for _ in range(2)] for _ in range(n_queries)]
        for path in ("raw", "db")
    }
    with tempfile.TemporaryDirectory() as tmp:
        paths = {k: Path(tmp) / f"{k}.db" for k in LAYOUTS}
        for layout, path in paths.items():
            start = time.perf_counter()
            await build(path, layout, tenants, docs)
            took = time.perf_counter() - start
            print(f"  built {layout}: {took:.1f} s, {path.stat().st_size / 2**20:.1f} MiB")
        for path_name, kind, res in await on_paths(paths, tenants, qs, limit, pairs):
            (o50, o99), (n50, n99) = res["old"], res["new"]
            print(
                f"  {path_name:<14} {kind:<7}old p50 {o50:6.2f} p99 {o99:6.2f} ms | "
                f"new p50 {n50:6.2f} p99 {n99:6.2f} ms | new/old p50 {n50 / o50:5.2f}x "
                f"p99 {n99 / o99:5.2f}x"
            )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 x 500 and 20 x 50, 30 queries (CI)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--limit", type=int, default=50, help="hits asked per search")
    ap.add_argument("--scale", action="append", help="TENANTSxDOCS (repeatable), e.g. 1x5000")
    args = ap.parse_args()
    scales = [(1, 500), (20, 50)] if args.quick else [(1, 500), (1, 5000), (1, 20000), (1000, 200)]
    if args.scale:
        scales = [(int(t), int(d)) for t, d in (x.split("x") for x in args.scale)]
    n = 30 if args.quick else args.queries
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; limit {args.limit})")
    for tenants, per in scales:
        print(f"== {tenants:,} tenant(s) x {per:,} documents, {n} queries per kind")
        asyncio.run(scale(tenants, per, n, args.limit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
