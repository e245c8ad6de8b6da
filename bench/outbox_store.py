"""The outbox on the `Database` protocol against the same statements on bare sqlite3.

One cycle is what a proactive message costs the outbox: `enqueue` (one
INSERT ... RETURNING), `claim` of it (the dead-letter UPDATE and the claiming
UPDATE ... RETURNING) and `delivered` (one UPDATE): four statements. Columns:
the same four statements called directly on a `sqlite3.Connection` on the
event loop (the floor: how the store ran before the port), `OutboxStore` on
`SqliteDatabase` (a thread hop per statement), and `OutboxStore` on
`PostgresDatabase` against a throwaway server on 127.0.0.1 (skipped when
PostgreSQL is not installed). The variants take turns in `--rounds` rounds
and each reports its median round, so a busy machine slows them alike; the
figures are ratios to the floor measured in the same run, with the load.

Run: .venv/bin/python -m bench.outbox_store [--n 2000] [--rounds 10] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path

import asyncpg

from bridge.core import db as core_db
from bridge.schedule.outbox import OutboxStore
from bridge.storage.postgres import PostgresDatabase
from bridge.storage.schema import MIGRATIONS
from bridge.storage.sqlite import SqliteDatabase
from tests.masking import m
from tests.storage.pg_server import NoPostgres, start_server

STATEMENTS = 4  # per cycle
T0 = 1_700_000_000_000
Cycle = Callable[[int], Awaitable[None]]


@asynccontextmanager
async def direct(path: Path) -> AsyncIterator[Cycle]:
    conn = core_db.connect(path)

    async def cycle(i: int) -> None:
        now = T0 + i
        (entry,) = conn.execute(
            "INSERT INTO outbox (tenant, channel, chat, key, text, state, created_ms, due_ms,"
            " leased) VALUES ('t', 'web', 'c', ?, 'hello', 'queued', ?, ?, 0)"
            " ON CONFLICT (tenant, channel, chat, key) DO NOTHING RETURNING id",
            (f"k{i}", now, now),
        ).fetchone()
        conn.execute(
            "UPDATE outbox SET state = 'dead', done_ms = ? WHERE state = 'queued' AND due_ms <= ?"
            " AND (attempts >= 20 OR (attempts > 0 AND created_ms <= ?))",
            (now, now, now - 172_800_000),
        )
        conn.execute(
            "UPDATE outbox SET due_ms = ?, attempts = attempts + 1, leased = 1 WHERE id IN"
            " (SELECT id FROM outbox AS o WHERE state = 'queued' AND due_ms <= ? AND NOT EXISTS"
            " (SELECT 1 FROM outbox AS e WHERE e.state = 'queued' AND e.tenant = o.tenant"
            " AND e.channel = o.channel AND e.chat = o.chat AND e.id < o.id)"
            " ORDER BY due_ms, id LIMIT 1) RETURNING id",
            (now + 120_000, now),
        ).fetchall()
        conn.execute(
            "UPDATE outbox SET state = 'delivered', done_ms = ?, leased = 0"
            " WHERE id = ? AND state = 'queued'",
            (now, entry),
        )

    try:
        yield cycle
    finally:
        conn.close()


def store_cycle(outbox: OutboxStore) -> Cycle:
    async def cycle(i: int) -> None:
        now = T0 + i
        await outbox.enqueue("t", "web", "c", m("hello"), f"k{i}", now_ms=now)
        (entry,) = await outbox.claim(now, 1)
        await outbox.delivered(entry.id, now)

    return cycle


@asynccontextmanager
async def on_sqlite(path: Path) -> AsyncIterator[Cycle]:
    db = await SqliteDatabase.open(path, readers=1)
    await db.migrate(MIGRATIONS)
    try:
        yield store_cycle(OutboxStore(db))
    finally:
        await db.aclose()


@asynccontextmanager
async def on_postgres(url: str) -> AsyncIterator[Cycle]:
    db = await PostgresDatabase.open(url)
    await db.migrate(MIGRATIONS)
    try:
        yield store_cycle(OutboxStore(db))
    finally:
        await db.aclose()


async def interleaved(
    opened: dict[str, AbstractAsyncContextManager[Cycle]], n: int, rounds: int
) -> dict[str, float]:
    """µs per cycle: the median of `rounds` rounds of n/rounds cycles, taking turns."""
    per = max(n // rounds, 1)
    async with AsyncExitStack() as stack:
        cycles = {name: await stack.enter_async_context(cm) for name, cm in opened.items()}
        samples: dict[str, list[float]] = {name: [] for name in cycles}
        for r in range(rounds):
            for name, cycle in cycles.items():
                start = time.perf_counter()
                for i in range(r * per, (r + 1) * per):
                    await cycle(i)
                samples[name].append((time.perf_counter() - start) / per * 1e6)
    return {name: statistics.median(v) for name, v in samples.items()}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="cycles per variant")
    parser.add_argument("--rounds", type=int, default=10, help="turns the variants take")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (CI: it still runs)")
    args = parser.parse_args()
    if args.quick:
        args.n, args.rounds = 20, 1
    print(f"load average before: {os.getloadavg()}")
    server = None
    try:
        server = start_server()
    except NoPostgres as exc:
        print(f"PostgreSQL: skipped ({exc})")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            variants: dict[str, AbstractAsyncContextManager[Cycle]] = {
                "sqlite3 direct": direct(Path(tmp) / "direct.db"),
                "OutboxStore/SqliteDatabase": on_sqlite(Path(tmp) / "layer.db"),
            }
            if server is not None:
                admin = await asyncpg.connect(server.url())
                await admin.execute('CREATE DATABASE "outbox"')
                await admin.close()
                variants["OutboxStore/PostgresDatabase"] = on_postgres(server.url("outbox"))
            got = await interleaved(variants, args.n, args.rounds)
    finally:
        if server is not None:
            server.remove()
    floor = got["sqlite3 direct"]
    print(f"\noutbox cycle = enqueue + claim + delivered ({STATEMENTS} statements)")
    print(f"{'variant':<30}{'us/cycle':>12}{'us/statement':>15}{'ratio':>9}")
    for name, us in got.items():
        print(f"{name:<30}{us:>12.1f}{us / STATEMENTS:>15.1f}{us / floor:>8.2f}x")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    asyncio.run(main())
