"""`roost usage [--tenant T] [--month YYYY-MM] [--json]`: tokens per tenant and model.

One row per tenant and model for the month (UTC; default: this month):
turns, tokens in (with the cached part), out, and in + out; then each
tenant's budgets with what is used of them (the daily one: today). `--json`
prints the same as one object. It only reads roost.db; nothing else. A
`--tenant` that is neither configured nor has files in the home is refused
(exit 2: a typo would print an empty month).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bridge.app.database import open_database
from bridge.cli.rows import tenant_arg
from bridge.cli.tenant_check import unknown_tenant
from bridge.core.budgets import Budget, budgets_of, month_days
from bridge.core.config import Settings
from bridge.core.config_sections import DatabaseSettings
from bridge.core.usage import UsageRow, UsageStore, utc_day

MONTH = re.compile(r"^[0-9]{4}-(0[1-9]|1[0-2])$")
HEAD = ("tenant", "model", "turns", "in", "cached", "out", "in+out")


def month_arg(value: str) -> str:
    if not MONTH.fullmatch(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a month: write YYYY-MM, e.g. 2027-01")
    return value


def usage_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tenant", type=tenant_arg, help="one tenant (default: all)")
    p.add_argument("--month", type=month_arg, help="YYYY-MM, UTC (default: this month)")
    p.add_argument("--json", action="store_true", help="one JSON object instead of a table")


def table(rows: list[UsageRow]) -> list[str]:
    """Aligned columns, numbers right-aligned with thousands separators."""
    cells = [list(HEAD)] + [
        [
            r.tenant,
            r.model,
            f"{r.turns:,}",
            f"{r.tokens.prompt:,}",
            f"{r.tokens.cached:,}",
            f"{r.tokens.completion:,}",
            f"{r.tokens.total:,}",
        ]
        for r in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(HEAD))]
    return ["  ".join(_cells(row, widths)).rstrip() for row in cells]


def _cells(row: list[str], widths: list[int]) -> list[str]:
    """Names left-aligned, numbers right-aligned."""
    pairs = enumerate(zip(row, widths, strict=True))
    return [c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in pairs]


def budget_lines(
    tenants: list[str], budget: Callable[[str], Budget], used: dict[str, tuple[int, int]]
) -> list[str]:
    lines = []
    for tenant in tenants:
        b = budget(tenant)
        today, month = used[tenant]
        parts = [
            f"{label} {spent:,}/{limit:,}"
            for label, limit, spent in (("daily", b.daily, today), ("monthly", b.monthly, month))
            if limit is not None
        ]
        lines.append(f"{tenant}: budgets " + ("; ".join(parts) if parts else "none"))
    return lines


def run_usage(args: argparse.Namespace, settings: Settings, now: float | None = None) -> int:
    if args.tenant is not None:
        refusal = unknown_tenant(settings, args.tenant, "usage", files_do=True)
        if refusal is not None:
            print(refusal, file=sys.stderr)
            return 2
    path = settings.home / "roost.db"
    if not path.is_file():
        print("roost: no database yet (the daemon has not run)", file=sys.stderr)
        return 1
    day = utc_day(time.time() if now is None else now)
    month = args.month or day[:7]
    rows, tenants, used = asyncio.run(_read(path, args.tenant, month, day, settings.database))
    budget = budgets_of(settings)
    if args.json:
        print(json.dumps(as_json(month, rows, tenants, budget, used), indent=2))
        return 0
    print(f"token usage, {month} (UTC)")
    print("\n".join(table(rows)) if rows else "no usage recorded")
    for line in budget_lines(tenants, budget, used):
        print(line)
    return 0


async def _read(
    path: Path, tenant: str | None, month: str, day: str, where: DatabaseSettings
) -> tuple[list[UsageRow], list[str], dict[str, tuple[int, int]]]:
    """The month's rows, the tenants they name, and each one's use today and this month."""
    database = await open_database(path, where)
    try:
        store = UsageStore(database)
        rows = await store.rows(tenant, *month_days(month + "-01"))
        tenants = sorted({r.tenant for r in rows} | ({tenant} if tenant else set()))
        used = {t: await store.used_now(t, day) for t in tenants}
    finally:
        await database.aclose()
    return rows, tenants, used


def as_json(
    month: str,
    rows: list[UsageRow],
    tenants: list[str],
    budget: Callable[[str], Budget],
    used: dict[str, tuple[int, int]],
) -> dict[str, object]:
    return {
        "month": month,
        "rows": [
            {
                "tenant": r.tenant,
                "model": r.model,
                "turns": r.turns,
                "prompt_tokens": r.tokens.prompt,
                "cached_tokens": r.tokens.cached,
                "completion_tokens": r.tokens.completion,
                "total_tokens": r.tokens.total,
            }
            for r in rows
        ],
        "budgets": {
            t: {
                "daily": budget(t).daily,
                "monthly": budget(t).monthly,
                "used_today": used[t][0],
                "used_this_month": used[t][1],
            }
            for t in tenants
        },
    }
