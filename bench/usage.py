"""Usage and budget bookkeeping per turn on the `Database` protocol, against the same work on
bare sqlite3.

A year of history (tenants x 3 models x days rows of `token_usage`) is loaded
first; a cycle is what one turn of a tenant with a daily and a monthly budget
costs: the budget check, then the usage record. Columns:
- `sqlite3 direct`: how it ran before the port, on `bridge.core.db`'s
  connection on the event loop: two indexed sums (today, this month) and the
  upsert, 3 statements (the floor);
- `UsageMeter/SqliteDatabase, kept`: the meter with its figure kept (the
  tenant's turns come faster than `refresh_s`): the upsert alone, 1 statement
  (the figure is read at a tenant's first turn);
- `UsageMeter/SqliteDatabase, read`: `refresh_s = 0`, the figure read at every
  check (a tenant whose turns are further apart, or at 80 % of a budget): one
  SELECT of both sums and the upsert, 2 statements;
- the same two on `PostgresDatabase` against a throwaway server on 127.0.0.1
  (skipped when PostgreSQL is not installed).
A tenant without a budget costs the upsert alone everywhere. The variants take
turns (`bench.outbox_store.interleaved`), each reports its median round; the
figures are ratios to the floor measured in the same run, with the load.

Run: .venv/bin/python -m bench.usage [--tenants 1000] [--days 365] [--n 2000] [--rounds 10]
[--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import tempfile
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg

from bench.outbox_store import Cycle, interleaved
from bridge.core import db as core_db
from bridge.core.budgets import Budget, UsageMeter, month_days
from bridge.core.usage import Tokens, UsageStore, utc_day
from bridge.storage.postgres import PostgresDatabase
from bridge.storage.protocol import Database
from bridge.storage.schema import MIGRATIONS
from bridge.storage.sqlite import SqliteDatabase
from bridge.types.audit_sink import TurnEvents
from tests.storage.pg_server import NoPostgres, start_server

NOW = 1_800_000_000.0  # 2027-01-15
BUDGET = Budget(10**9, 10**10)
TOKENS = Tokens(900, 120, 512)


def history(tenants: int, days: int) -> list[tuple[object, ...]]:
    start = datetime.fromtimestamp(NOW, UTC) - timedelta(days=days - 1)
    return [
        (f"t{t}", model, (start + timedelta(days=d)).strftime("%Y-%m-%d"), 3, 900, 120, 512)
        for t in range(tenants)
        for model in ("default", "smart", "fast")
        for d in range(days)
    ]


FILL = "INSERT INTO token_usage VALUES (?, ?, ?, ?, ?, ?, ?)"


@asynccontextmanager
async def direct(path: Path, rows: list[tuple[object, ...]], tenants: int) -> AsyncIterator[Cycle]:
    """The statements of the store before the port, on the loop (the floor)."""
    conn = core_db.connect(path)
    with conn:
        conn.executemany(FILL, rows)
    day = utc_day(NOW)

    def used(tenant: str, first: str, last: str) -> int:
        return int(
            conn.execute(
                "SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0) FROM token_usage "
                "WHERE tenant=? AND day BETWEEN ? AND ?",
                (tenant, first, last),
            ).fetchone()[0]
        )

    async def cycle(i: int) -> None:
        tenant = f"t{i % tenants}"
        used(tenant, day, day) + used(tenant, *month_days(day))
        conn.execute(
            "INSERT INTO token_usage (tenant, model, day, turns, prompt_tokens, "
            "completion_tokens, cached_tokens) VALUES (?,?,?,?,?,?,?) "
            "ON CONFLICT (tenant, day, model) DO UPDATE SET turns = turns + excluded.turns, "
            "prompt_tokens = prompt_tokens + excluded.prompt_tokens, "
            "completion_tokens = completion_tokens + excluded.completion_tokens, "
            "cached_tokens = cached_tokens + excluded.cached_tokens",
            (tenant, "default", day, 1, TOKENS.prompt, TOKENS.completion, TOKENS.cached),
        )

    try:
        yield cycle
    finally:
        conn.close()


async def meter_cycle(db: Database, tenants: int, refresh_s: float) -> Cycle:
    meter = UsageMeter(UsageStore(db), lambda t: BUDGET, lambda: NOW, refresh_s=refresh_s)
    for t in range(tenants):  # each tenant's first check reads its figure: done here
        await meter.reached(f"t{t}")

    async def cycle(i: int) -> None:
        tenant = f"t{i % tenants}"
        assert await meter.refusal(tenant, TurnEvents()) is None
        await meter.record(tenant, "default", TOKENS)

    return cycle


@asynccontextmanager
async def on_database(
    opened: Database, rows: list[tuple[object, ...]], tenants: int, refresh_s: float
) -> AsyncIterator[Cycle]:
    try:
        await opened.migrate(MIGRATIONS)
        await opened.execute_many(FILL, rows)
        yield await meter_cycle(opened, tenants, refresh_s)
    finally:
        await opened.aclose()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--n", type=int, default=2000, help="cycles per variant")
    parser.add_argument("--rounds", type=int, default=10, help="turns the variants take")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (CI: it still runs)")
    args = parser.parse_args()
    if args.quick:
        args.tenants, args.days, args.n, args.rounds = 20, 30, 40, 2
    print(f"load average before: {os.getloadavg()}")
    rows = history(args.tenants, args.days)
    server = None
    try:
        server = start_server()
    except NoPostgres as exc:
        print(f"PostgreSQL: skipped ({exc})")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            here = Path(tmp)
            variants: dict[str, AbstractAsyncContextManager[Cycle]] = {
                "sqlite3 direct": direct(here / "direct.db", rows, args.tenants)
            }
            for how, refresh_s in (("kept", 3600.0), ("read", 0.0)):
                lite = await SqliteDatabase.open(here / f"{how}.db", readers=1)
                variants[f"UsageMeter/SqliteDatabase, {how}"] = on_database(
                    lite, rows, args.tenants, refresh_s
                )
            if server is not None:
                for how, refresh_s in (("kept", 3600.0), ("read", 0.0)):
                    admin = await asyncpg.connect(server.url())
                    await admin.execute(f'CREATE DATABASE "usage_{how}"')
                    await admin.close()
                    pg = await PostgresDatabase.open(server.url(f"usage_{how}"))
                    variants[f"UsageMeter/PostgresDatabase, {how}"] = on_database(
                        pg, rows, args.tenants, refresh_s
                    )
            got = await interleaved(variants, args.n, args.rounds)
    except sqlite3.Error as exc:
        raise SystemExit(f"bench.usage: {exc}") from exc
    finally:
        if server is not None:
            server.remove()
    print(
        f"token_usage rows: {len(rows):,}; a cycle = one turn of a tenant with a daily and a "
        "monthly budget: the check, the record (3 statements on the floor; through the "
        "meter 1 when its figure is kept, 2 when read)"
    )
    floor = got["sqlite3 direct"]
    print(f"\n{'variant':<36}{'us/cycle':>10}{'statements':>12}{'us/statement':>14}{'ratio':>8}")
    for name, us in got.items():
        n = 3 if name == "sqlite3 direct" else 1 if name.endswith("kept") else 2
        print(f"{name:<36}{us:>10.1f}{n:>12}{us / n:>14.1f}{us / floor:>7.2f}x")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    asyncio.run(main())
