"""The outbox and the job store on the `Database` protocol against the same statements
on bare sqlite3.

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

`--store jobs`: one cycle is a one-shot job's life in the scheduler: `create`
(one INSERT ... SELECT ... WHERE count < max RETURNING), `due` (one SELECT),
`mark_run` (the job's SELECT and one UPDATE): four statements.

Through the stores both cycles run a fifth statement the floor does not: the
`schedule` topic's notify of `enqueue` and `create` (on SQLite an upsert of a
counter row; on PostgreSQL `pg_notify`). The per-statement column divides by
four, the work the floor does.

Run: .venv/bin/python -m bench.outbox_store [--store outbox|jobs] [--n 2000] [--rounds 10]
[--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import fields
from pathlib import Path

import asyncpg

from bridge.core import db as core_db
from bridge.schedule.jobs import Job, JobStore
from bridge.schedule.outbox import OutboxStore
from bridge.storage.postgres import PostgresDatabase
from bridge.storage.protocol import Database
from bridge.storage.schema import MIGRATIONS
from bridge.storage.sqlite import SqliteDatabase
from tests.masking import m
from tests.storage.pg_server import NoPostgres, start_server

STATEMENTS = 4  # per cycle, in either store
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


@asynccontextmanager
async def direct_jobs(path: Path) -> AsyncIterator[Cycle]:
    """The job cycle's four statements on the old connection (the floor)."""
    conn = core_db.connect(path)
    columns = ", ".join(f.name for f in fields(Job))

    async def cycle(i: int) -> None:
        now = T0 + i
        conn.execute(
            "INSERT INTO jobs (tenant, id, channel, chat, kind, spec, payload, tz, state,"
            " next_run_ms, created_ms) SELECT 't', ?, 'web', 'c', 'reminder', '', 'bread',"
            " 'UTC', 'active', ?, ? WHERE (SELECT COUNT(*) FROM jobs WHERE tenant = 't'"
            " AND state != 'done') < 50 ON CONFLICT (tenant, id) DO NOTHING RETURNING id",
            (f"j{i}", now, now),
        ).fetchone()
        (due,) = conn.execute(
            f"SELECT {columns} FROM jobs WHERE state = 'active' AND next_run_ms <= ?"
            " ORDER BY next_run_ms LIMIT 1",
            (now,),
        ).fetchall()
        conn.execute(f"SELECT {columns} FROM jobs WHERE tenant = ? AND id = ?", ("t", due[1]))
        conn.execute(
            "UPDATE jobs SET state = 'done', next_run_ms = NULL, last_run_ms = ?,"
            " runs = runs + 1, fail_count = 0, last_error = '' WHERE tenant = ? AND id = ?",
            (now, "t", due[1]),
        )

    try:
        yield cycle
    finally:
        conn.close()


def job_cycle(jobs: JobStore) -> Cycle:
    async def cycle(i: int) -> None:
        now = T0 + i
        await jobs.create(
            tenant="t", channel="web", chat="c", kind="reminder", spec="",
            payload=m("bread"), tz="UTC", next_run_ms=now, created_ms=now,
        )  # fmt: skip
        (job,) = await jobs.due(now, 1)
        await jobs.mark_run("t", job.id, ran_ms=now, next_run_ms=None)

    return cycle


def no_next(spec: str, tz: str, after_ms: int) -> int | None:
    return None  # one-shots only


def store_cycle(outbox: OutboxStore) -> Cycle:
    async def cycle(i: int) -> None:
        now = T0 + i
        await outbox.enqueue("t", "web", "c", m("hello"), f"k{i}", now_ms=now)
        (entry,) = await outbox.claim(now, 1)
        await outbox.delivered(entry.id, now)

    return cycle


def cycle_of(store: str, db: Database) -> Cycle:
    return job_cycle(JobStore(db, no_next)) if store == "jobs" else store_cycle(OutboxStore(db))


@asynccontextmanager
async def opened(
    where: Path | str, make: Callable[[Database], Cycle | Awaitable[Cycle]]
) -> AsyncIterator[Cycle]:
    """A migrated `Database` (SQLite at a path, PostgreSQL at a URL) and the cycle
    `make` builds on it; closed after."""
    db: Database
    if isinstance(where, Path):
        db = await SqliteDatabase.open(where, readers=1)
    else:
        db = await PostgresDatabase.open(where)
    try:
        await db.migrate(MIGRATIONS)
        made = make(db)
        yield await made if inspect.isawaitable(made) else made
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


Opener = Callable[[Path], AbstractAsyncContextManager[Cycle]]


async def three_ways(
    store: str,
    db_name: str,
    floor: Opener,
    on_sqlite: Opener,
    on_postgres: Callable[[str, Path], AbstractAsyncContextManager[Cycle]],
    n: int,
    rounds: int,
) -> dict[str, float]:
    """µs per cycle of the floor (`sqlite3 direct`), of `store` on `SqliteDatabase` and,
    when a throwaway PostgreSQL can be started here, on `PostgresDatabase` (database
    `db_name`; `on_postgres` also gets the temporary directory), taking turns."""
    server = None
    try:
        server = start_server()
    except NoPostgres as exc:
        print(f"PostgreSQL: skipped ({exc})")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            here = Path(tmp)
            variants: dict[str, AbstractAsyncContextManager[Cycle]] = {
                "sqlite3 direct": floor(here / "direct.db"),
                f"{store}/SqliteDatabase": on_sqlite(here / "layer.db"),
            }
            if server is not None:
                admin = await asyncpg.connect(server.url())
                await admin.execute(f'CREATE DATABASE "{db_name}"')
                await admin.close()
                variants[f"{store}/PostgresDatabase"] = on_postgres(server.url(db_name), here)
            return await interleaved(variants, n, rounds)
    finally:
        if server is not None:
            server.remove()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="cycles per variant")
    parser.add_argument("--rounds", type=int, default=10, help="turns the variants take")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (CI: it still runs)")
    parser.add_argument("--store", choices=("outbox", "jobs"), default="outbox")
    args = parser.parse_args()
    if args.quick:
        args.n, args.rounds = 20, 1
    print(f"load average before: {os.getloadavg()}")
    name = "JobStore" if args.store == "jobs" else "OutboxStore"
    got = await three_ways(
        name,
        "outbox",
        direct_jobs if args.store == "jobs" else direct,
        lambda path: opened(path, lambda db: cycle_of(args.store, db)),
        lambda url, _tmp: opened(url, lambda db: cycle_of(args.store, db)),
        args.n,
        args.rounds,
    )
    what = (
        "job cycle = create + due + mark_run"
        if args.store == "jobs"
        else "outbox cycle = enqueue + claim + delivered"
    )
    print_cycles(f"{what} ({STATEMENTS} statements)", got, STATEMENTS)


def print_cycles(title: str, got: dict[str, float], statements: int) -> None:
    """Each variant's µs per cycle and per statement, and its ratio to `sqlite3 direct`."""
    floor = got["sqlite3 direct"]
    width = max(30, *(len(name) + 2 for name in got))
    print(f"\n{title}")
    print(f"{'variant':<{width}}{'us/cycle':>12}{'us/statement':>15}{'ratio':>9}")
    for name, us in got.items():
        print(f"{name:<{width}}{us:>12.1f}{us / statements:>15.1f}{us / floor:>8.2f}x")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    asyncio.run(main())
