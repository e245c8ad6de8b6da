"""Storage drivers on roost's kind of queries: microseconds per operation and ratios.

SQLite: today's direct `sqlite3` calls (the floor) against `SqliteDatabase`
(the same statements through the writer/reader threads; a short statement
outside a transaction run inline by an idle connection) and against
`SqliteDatabase` with `inline_reads=inline_writes=False` (every statement a
thread hop, as before the inline path). PostgreSQL, on a
throwaway server this script starts (tests/storage/pg_server.py): asyncpg
(the floor) against psycopg 3 async, one connection each, and against
`PostgresDatabase` (our layer over an asyncpg pool). Operations: a short
insert, a point select, a small transaction (insert + update), a claim
(`FOR UPDATE SKIP LOCKED` on PostgreSQL, a plain `UPDATE ... RETURNING` on
SQLite), a full-text query over `--docs` documents, and a wide select (a point
read in a long statement text, the shape of a turn's session load: what the
layer does per character of SQL shows there). The drivers take
turns in `--rounds` rounds per operation and each reports its median round,
so a busy machine slows them alike.

Run: .venv/bin/python -m bench.storage_drivers [--n 2000] [--docs 2000] [--quick] [--sqlite-only]
psycopg is not a dependency; its column is skipped unless it is installed
(`.venv/bin/pip install 'psycopg[binary]'`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg

from bridge.storage.postgres import PostgresDatabase
from bridge.storage.sqlite import SqliteDatabase
from tests.storage.pg_server import NoPostgres, start_server

WORDS = ("lantern", "river", "harbour", "pepper", "violin", "garden", "copper", "meadow")
OPS = ("insert", "select", "transaction", "claim", "fts", "wide select")
# a point read in ~400 characters, like the session load a turn runs (placeholders {a}, {b})
WIDE = (
    "SELECT a.id AS first_id, a.tenant AS first_tenant, a.k AS first_key, a.n AS first_n,"
    " b.id AS second_id, b.tenant AS second_tenant, b.k AS second_key, b.n AS second_n"
    " FROM kv a LEFT JOIN kv b ON b.id BETWEEN a.id AND a.id + 1 AND b.tenant = a.tenant"
    " AND b.k <> CASE WHEN a.n = {a} THEN '' ELSE a.k END WHERE a.id = {b} ORDER BY b.id"
)
Timings = dict[str, float]  # op -> microseconds per operation
Ops = list[Callable[[int], Awaitable[Any]]]  # one callable per OPS entry, given a counter


def _doc(i: int) -> str:
    return " ".join(WORDS[(i * k + k) % len(WORDS)] for k in range(1, 9))


async def _time(first: int, n: int, op: Callable[[int], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    for i in range(first, first + n):
        await op(i)
    return (time.perf_counter() - start) / n * 1e6


async def interleaved(
    opened: dict[str, AbstractAsyncContextManager[Ops | None]], n: int, rounds: int
) -> dict[str, Timings | None]:
    """Per operation, `rounds` rounds of n/rounds calls, the drivers taking turns in each
    round (a busy machine then slows them alike); the median round of each."""
    per = max(n // rounds, 1)
    async with AsyncExitStack() as stack:
        ops = {name: await stack.enter_async_context(cm) for name, cm in opened.items()}
        samples: dict[str, dict[str, list[float]]] = {name: {} for name in ops}
        for index, op in enumerate(OPS):
            for r in range(rounds):
                for name, got in ops.items():
                    if got is not None:
                        took = await _time(r * per, per, got[index])
                        samples[name].setdefault(op, []).append(took)
    return {
        name: {op: statistics.median(v) for op, v in samples[name].items()}
        if ops[name] is not None
        else None
        for name in ops
    }


# -- SQLite ---------------------------------------------------------------------------

SQLITE_DDL = (
    "CREATE TABLE kv (id INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT, k TEXT, n INTEGER)",
    "CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT)",
    "CREATE VIRTUAL TABLE docs USING fts5(body)",
)


def _sqlite_fill(conn: sqlite3.Connection, n: int, docs: int) -> None:
    for ddl in SQLITE_DDL:
        conn.execute(ddl)
    conn.executemany("INSERT INTO jobs (owner) VALUES (NULL)", [()] * n)
    conn.executemany(
        "INSERT INTO docs (rowid, body) VALUES (?, ?)", [(i, _doc(i)) for i in range(docs)]
    )
    conn.commit()


@asynccontextmanager
async def sqlite_direct(path: Path, n: int, docs: int) -> AsyncIterator[Ops]:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    _sqlite_fill(conn, n, docs)

    async def insert(i: int) -> None:
        conn.execute("INSERT INTO kv (tenant, k, n) VALUES (?, ?, ?)", ("t", f"k{i}", i))

    async def select(i: int) -> None:
        conn.execute("SELECT n FROM kv WHERE id = ?", (i + 1,)).fetchone()

    async def tx(i: int) -> None:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO kv (tenant, k, n) VALUES (?, ?, ?)", ("t", f"x{i}", i))
        conn.execute("UPDATE kv SET n = n + 1 WHERE id = ?", (i + 1,))
        conn.execute("COMMIT")

    async def claim(i: int) -> None:
        conn.execute(
            "UPDATE jobs SET owner = ? WHERE id = (SELECT id FROM jobs WHERE owner IS NULL "
            "ORDER BY id LIMIT 1) RETURNING id",
            ("w",),
        ).fetchone()

    async def fts(i: int) -> None:
        conn.execute(
            "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT 10",
            (f'"{WORDS[i % len(WORDS)]}"',),
        ).fetchall()

    async def wide(i: int) -> None:
        conn.execute(WIDE.format(a="?", b="?"), (i, i + 1)).fetchall()

    try:
        yield [insert, select, tx, claim, fts, wide]
    finally:
        conn.close()


@asynccontextmanager
async def sqlite_layer(path: Path, n: int, docs: int, inline: bool = True) -> AsyncIterator[Ops]:
    seed = sqlite3.connect(path)
    seed.execute("PRAGMA journal_mode=WAL")
    _sqlite_fill(seed, n, docs)
    seed.close()
    db = await SqliteDatabase.open(path, inline_reads=inline, inline_writes=inline)

    async def insert(i: int) -> None:
        await db.execute("INSERT INTO kv (tenant, k, n) VALUES (?, ?, ?)", ("t", f"k{i}", i))

    async def select(i: int) -> None:
        await db.fetch_one("SELECT n FROM kv WHERE id = ?", (i + 1,))

    async def tx(i: int) -> None:
        async with db.transaction():
            await db.execute("INSERT INTO kv (tenant, k, n) VALUES (?, ?, ?)", ("t", f"x{i}", i))
            await db.execute("UPDATE kv SET n = n + 1 WHERE id = ?", (i + 1,))

    async def claim(i: int) -> None:
        await db.fetch_one(
            "UPDATE jobs SET owner = ? WHERE id = (SELECT id FROM jobs WHERE owner IS NULL "
            "ORDER BY id LIMIT 1) RETURNING id",
            ("w",),
        )

    async def fts(i: int) -> None:
        await db.fetch_all(
            "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT 10",
            (f'"{WORDS[i % len(WORDS)]}"',),
        )

    async def wide(i: int) -> None:
        await db.fetch_all(WIDE.format(a="?", b="?"), (i, i + 1))

    try:
        yield [insert, select, tx, claim, fts, wide]
    finally:
        await db.aclose()


# -- PostgreSQL -----------------------------------------------------------------------

PG_DDL = """
CREATE TABLE kv (id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                 tenant TEXT, k TEXT, n BIGINT);
CREATE TABLE jobs (id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                   owner TEXT);
CREATE TABLE docs (id BIGINT PRIMARY KEY, body TEXT, tsv tsvector);
CREATE INDEX docs_tsv ON docs USING gin (tsv);
"""
CLAIM = (
    "UPDATE jobs SET owner = {w} WHERE id = (SELECT id FROM jobs WHERE owner IS NULL "
    "ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id"
)
FTS = (
    "SELECT id FROM docs, to_tsquery('simple', {q}) AS q WHERE tsv @@ q "
    "ORDER BY ts_rank(tsv, q) DESC LIMIT 10"
)


async def _pg_fill(url: str, n: int, docs: int) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(PG_DDL)
        await conn.execute("INSERT INTO jobs (owner) SELECT NULL FROM generate_series(1, $1)", n)
        await conn.executemany(
            "INSERT INTO docs VALUES ($1, $2, to_tsvector('simple', $2))",
            [(i, _doc(i)) for i in range(docs)],
        )
    finally:
        await conn.close()


def _pg_ops(
    run: Callable[..., Awaitable[Any]],
    tx: Callable[[int], Awaitable[None]],
    mark: Callable[[int], str],
) -> list[Callable[[int], Awaitable[Any]]]:
    """The operations over `run(sql, *args)` with the driver's placeholder `mark(k)`."""
    p1, p2, p3 = mark(1), mark(2), mark(3)

    async def insert(i: int) -> None:
        await run(f"INSERT INTO kv (tenant, k, n) VALUES ({p1}, {p2}, {p3})", "t", f"k{i}", i)

    async def select(i: int) -> None:
        await run(f"SELECT n FROM kv WHERE id = {p1}", i + 1)

    async def claim(i: int) -> None:
        await run(CLAIM.format(w=p1), "w")

    async def fts(i: int) -> None:
        await run(FTS.format(q=p1), WORDS[i % len(WORDS)])

    async def wide(i: int) -> None:
        await run(WIDE.format(a=p1, b=p2), i, i + 1)

    return [insert, select, tx, claim, fts, wide]


@asynccontextmanager
async def pg_asyncpg(url: str) -> AsyncIterator[Ops]:
    conn = await asyncpg.connect(url)

    async def tx(i: int) -> None:
        async with conn.transaction():
            await conn.execute("INSERT INTO kv (tenant, k, n) VALUES ($1, $2, $3)", "t", f"x{i}", i)
            await conn.execute("UPDATE kv SET n = n + 1 WHERE id = $1", i + 1)

    try:
        ops = _pg_ops(conn.fetch, tx, lambda k: f"${k}")
        yield ops
    finally:
        await conn.close()


@asynccontextmanager
async def pg_psycopg(url: str) -> AsyncIterator[Ops | None]:
    try:
        import psycopg
    except ImportError:
        yield None
        return
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)

    async def run(sql: str, *args: Any) -> Any:
        cur = await conn.execute(sql, args)
        return await cur.fetchall() if cur.description else None

    async def tx(i: int) -> None:
        async with conn.transaction():
            await conn.execute(
                "INSERT INTO kv (tenant, k, n) VALUES (%s, %s, %s)", ("t", f"x{i}", i)
            )
            await conn.execute("UPDATE kv SET n = n + 1 WHERE id = %s", (i + 1,))

    try:
        ops = _pg_ops(run, tx, lambda k: "%s")
        yield ops
    finally:
        await conn.close()


@asynccontextmanager
async def pg_layer(url: str) -> AsyncIterator[Ops]:
    db = await PostgresDatabase.open(url, pool_size=4)

    async def run(sql: str, *args: Any) -> Any:
        return await db.fetch_all(sql, args)

    async def tx(i: int) -> None:
        async with db.transaction():
            await db.execute("INSERT INTO kv (tenant, k, n) VALUES (?, ?, ?)", ("t", f"x{i}", i))
            await db.execute("UPDATE kv SET n = n + 1 WHERE id = ?", (i + 1,))

    try:
        ops = _pg_ops(run, tx, lambda k: "?")
        yield ops
    finally:
        await db.aclose()


def _table(title: str, columns: dict[str, Timings | None], floor: str) -> None:
    present = {k: v for k, v in columns.items() if v is not None}
    print(f"\n{title} (us/op; ratio to {floor} in this run)")
    print(f"{'op':<12}" + "".join(f"{name:>24}" for name in present))
    for op in OPS:
        base = present[floor][op]
        cells = "".join(f"{t[op]:>16.1f} ({t[op] / base:4.2f}x)" for t in present.values())
        print(f"{op:<12}{cells}")
    for name, value in columns.items():
        if value is None:
            print(f"({name}: not installed, skipped)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="operations per kind and driver")
    parser.add_argument("--docs", type=int, default=2000, help="documents in the FTS table")
    parser.add_argument("--rounds", type=int, default=10, help="turns the drivers take")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (CI: it still runs)")
    parser.add_argument("--sqlite-only", action="store_true", help="no PostgreSQL part")
    args = parser.parse_args()
    if args.quick:
        args.n, args.docs, args.rounds = 20, 50, 1
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        got = await interleaved(
            {
                "sqlite3 direct": sqlite_direct(Path(tmp) / "direct.db", args.n, args.docs),
                "SqliteDatabase": sqlite_layer(Path(tmp) / "layer.db", args.n, args.docs),
                "threads only": sqlite_layer(
                    Path(tmp) / "threads.db", args.n, args.docs, inline=False
                ),
            },
            args.n,
            args.rounds,
        )
    _table("SQLite", got, "sqlite3 direct")
    if args.sqlite_only:
        return
    try:
        server = start_server()
    except NoPostgres as exc:
        print(f"\nPostgreSQL: skipped ({exc})")
        return
    try:
        drivers = {
            "asyncpg": pg_asyncpg,
            "psycopg 3 async": pg_psycopg,
            "PostgresDatabase": pg_layer,
        }
        urls = {}
        for name in drivers:
            db_name = name.split()[0].lower()
            admin = await asyncpg.connect(server.url())
            await admin.execute(f'CREATE DATABASE "{db_name}"')
            await admin.close()
            urls[name] = server.url(db_name)
            await _pg_fill(urls[name], args.n, args.docs)
        got = await interleaved(
            {name: bench(urls[name]) for name, bench in drivers.items()}, args.n, args.rounds
        )
        _table("PostgreSQL (one connection each, 127.0.0.1)", got, "asyncpg")
    finally:
        server.remove()
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    asyncio.run(main())
