"""Usage and budget bookkeeping per turn, in a real SQLite file (WAL, as the daemon opens it).

A year of history (1,000 tenants x 3 models x 365 days = 1.1 M rows) is
loaded first; then, per turn, it times side by side: the budget check with no
budget set (no query), with a daily and a monthly budget (two indexed sums),
and the usage record (one UPSERT). Medians in microseconds, one run.

Run: .venv/bin/python -m bench.usage [--tenants 1000] [--days 365] [--n 2000] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bridge.core import db
from bridge.core.budgets import Budget, UsageMeter
from bridge.core.usage import Tokens, UsageStore
from bridge.types.audit_sink import TurnEvents

NOW = 1_800_000_000.0  # 2027-01-15


def fill(conn: sqlite3.Connection, tenants: int, days: int) -> None:
    start = datetime.fromtimestamp(NOW, UTC) - timedelta(days=days - 1)
    rows = [
        (f"t{t}", model, (start + timedelta(days=d)).strftime("%Y-%m-%d"), 3, 900, 120, 512)
        for t in range(tenants)
        for model in ("default", "smart", "fast")
        for d in range(days)
    ]
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO token_usage VALUES (?,?,?,?,?,?,?)", rows)
    conn.execute("COMMIT")


def median_us(fn: Callable[[int], object], n: int) -> float:
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="tiny sizes (CI: it still runs)")
    args = parser.parse_args()
    if args.quick:
        args.tenants, args.days, args.n = 20, 30, 200
    with tempfile.TemporaryDirectory() as tmp:
        conn = db.connect(Path(tmp) / "roost.db")
        fill(conn, args.tenants, args.days)
        store = UsageStore(conn)
        none = UsageMeter(store, lambda t: Budget(), lambda: NOW)
        both = UsageMeter(store, lambda t: Budget(10**9, 10**10), lambda: NOW)
        loop = asyncio.new_event_loop()

        def check(meter: UsageMeter) -> Callable[[int], object]:
            return lambda i: loop.run_until_complete(meter.refusal(f"t{i % 1000}", TurnEvents()))

        def record(i: int) -> None:
            none.record(f"t{i % args.tenants}", "default", Tokens(900, 120, 512))

        figures = [
            ("check, no budget", median_us(check(none), args.n)),
            ("check, daily + monthly budget", median_us(check(both), args.n)),
            ("record one turn (UPSERT)", median_us(record, args.n)),
        ]
        loop.close()
        conn.close()
    rows = args.tenants * 3 * args.days
    print(f"token_usage rows: {rows:,}; medians over {args.n:,} turns")
    for name, us in figures:
        print(f"  {name:<32} {us:8.1f} µs")


if __name__ == "__main__":
    main()
