"""`roost db migrate`'s copy (`bridge.storage.copy`): rows/s from a home's SQLite into PostgreSQL.

The home: every table of the schema with 20 rows, `--n` messages in each
of session_messages and conversation_messages and `--n` documents in the
recall text index (two tenants). Variants, taking turns each round:
- `copy -> postgresql`: `copy.copy` into a new empty database on a throwaway
  server on 127.0.0.1 (migrate, per table delete + batched INSERTs in one
  transaction, then the count-and-hash verification of both sides);
- `again (verify only)`: the same call once more (a finished copy is only
  compared: both sides read and hashed);
- `copy -> sqlite`: into a new SQLite file (no network);
- floor: bare asyncpg `copy_records_to_table` (PostgreSQL's COPY) of the same
  rows into a new migrated database, no text index, no verification: what the
  server takes at best.
Figures are each variant's median round, as rows/s (table rows + documents)
and as a ratio to the floor's time, with the load average.

Run: .venv/bin/python -m bench.db_copy [--n 10000] [--rounds 3] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import tempfile
import time
from pathlib import Path

import asyncpg

from bridge.storage import copy
from bridge.storage.postgres import PostgresDatabase
from bridge.storage.schema import MIGRATIONS
from bridge.storage.sqlite import SqliteDatabase
from tests.storage.filler import fill
from tests.storage.pg_server import NoPostgres, PgServer, start_server

_names = itertools.count()


async def new_database(server: PgServer) -> str:
    name = f"bench{next(_names)}"
    admin = await asyncpg.connect(server.url())
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    return server.url(name)


async def copy_to(source: SqliteDatabase, target: PostgresDatabase | SqliteDatabase) -> float:
    began = time.perf_counter()
    checks = await copy.copy(source, target, MIGRATIONS, source_name="bench")
    took = time.perf_counter() - began
    assert all(c.ok for c in checks)
    return took


async def floor(source: SqliteDatabase, url: str) -> float:
    db = await PostgresDatabase.open(url)
    await db.migrate(MIGRATIONS)
    await db.aclose()
    conn = await asyncpg.connect(url)
    try:
        began = time.perf_counter()
        for table, columns in sorted((await source.tables()).items()):
            rows = await source.fetch_all(f'SELECT * FROM "{table}"')
            await conn.copy_records_to_table(table, records=rows, columns=list(columns))
        return time.perf_counter() - began
    finally:
        await conn.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="messages (and documents)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="tiny sizes (CI: it still runs)")
    args = parser.parse_args()
    if args.quick:
        args.n, args.rounds = 300, 1
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "roost.db"
        source = await SqliteDatabase.open(path)
        await source.migrate(MIGRATIONS)
        await fill(
            source,
            path,
            20,
            big=args.n,
            big_tables=("session_messages", "conversation_messages"),
            docs=args.n // 2,
        )
        tables = await copy.row_counts(source)
        rows = sum(tables.values()) + 2 * (args.n // 2)
        print(f"home: {len(tables)} tables, {sum(tables.values())} rows, {args.n} documents")
        try:
            server = start_server()
        except NoPostgres as exc:
            print(f"PostgreSQL not installed ({exc}): SQLite only")
            server = None
        times: dict[str, list[float]] = {}
        try:
            for r in range(args.rounds):
                lite = await SqliteDatabase.open(Path(tmp) / f"target{r}.db")
                times.setdefault("copy -> sqlite", []).append(await copy_to(source, lite))
                await lite.aclose()
                if server is None:
                    continue
                url = await new_database(server)
                target = await PostgresDatabase.open(url)
                times.setdefault("copy -> postgresql", []).append(await copy_to(source, target))
                times.setdefault("again (verify only)", []).append(await copy_to(source, target))
                await target.aclose()
                times.setdefault("floor: asyncpg COPY", []).append(
                    await floor(source, await new_database(server))
                )
        finally:
            await source.aclose()
            if server is not None:
                server.remove()
    base = statistics.median(times.get("floor: asyncpg COPY", [0.0])) or None
    print(f"{'variant':<22} {'s':>8} {'rows/s':>9} {'x floor':>8}")
    for name, got in times.items():
        t = statistics.median(got)
        ratio = f"{t / base:8.1f}" if base else "       -"
        print(f"{name:<22} {t:8.2f} {rows / t:9.0f} {ratio}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    asyncio.run(main())
