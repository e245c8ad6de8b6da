"""Token usage per tenant, model and UTC day (table `token_usage`), and budget notices.

The store runs on the `Database` protocol (`bridge.storage`: SQLite or
PostgreSQL). A turn's tokens (in, out, and the cached part of in) are added
with one UPSERT statement (`... ON CONFLICT DO UPDATE SET n = n +
excluded.n`), so counting is atomic and per tenant whatever runs at the same
time (the daemon, `roost style sweep` in another process, another instance
on PostgreSQL): a crash before it counts nothing, a crash after it counts
the turn once. Days are
UTC (`YYYY-MM-DD`), months their first seven characters. `budget_notices`
remembers which budget period of a tenant was already announced, so
`budget.reached` is audited once per tenant per period. `recorded` is the same
count as a unit (`bridge.storage.units`), for a turn whose end writes it in
one transaction with its session append (`bridge.core.turn`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from functools import lru_cache

from bridge.storage.protocol import Database
from bridge.storage.units import Unit, execute


def utc_day(now: float) -> str:
    """`YYYY-MM-DD` of `now` (seconds since the epoch) in UTC (a day's text is made once:
    `_day_text` is pure, and every turn asks for today's)."""
    return _day_text(int(now // 86_400))


@lru_cache(maxsize=64)
def _day_text(day: int) -> str:
    """`YYYY-MM-DD` of the `day`-th UTC day since the epoch."""
    return (date(1970, 1, 1) + timedelta(days=day)).isoformat()


@dataclass(frozen=True, slots=True)
class Tokens:
    prompt: int = 0  # in, the cached part included
    completion: int = 0  # out
    cached: int = 0  # of `prompt`, read from the provider's cache

    @property
    def total(self) -> int:
        """What a budget counts: in + out."""
        return self.prompt + self.completion


@dataclass(frozen=True, slots=True)
class UsageRow:
    tenant: str
    model: str
    turns: int
    tokens: Tokens


class UsageStore:
    """`token_usage` and `budget_notices` on the `Database` protocol (SQLite or PostgreSQL);
    every write ONE statement, never a transaction held across an await."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def record(
        self, tenant: str, model: str, day: str, tokens: Tokens, turns: int = 1
    ) -> None:
        """Add one turn and its tokens (a summary call: tokens, `turns=0`); one atomic
        statement, so instances adding at once lose nothing."""
        await self.db.execute(_RECORD, (tenant, model, day, turns, *_parts(tokens)))

    async def used(self, tenant: str, first_day: str, last_day: str) -> int:
        """In + out tokens of `tenant` from `first_day` to `last_day` (inclusive)."""
        total = await self.db.fetch_value(
            "SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0) FROM token_usage "
            "WHERE tenant = ? AND day BETWEEN ? AND ?",
            (tenant, first_day, last_day),
        )
        return int(total)

    async def used_now(self, tenant: str, day: str) -> tuple[int, int]:
        """In + out tokens of `tenant` on `day` and in its month: one statement."""
        row = await self.db.fetch_one(
            "SELECT COALESCE(SUM(CASE WHEN day = ? THEN prompt_tokens + completion_tokens"
            " ELSE 0 END), 0), COALESCE(SUM(prompt_tokens + completion_tokens), 0)"
            " FROM token_usage WHERE tenant = ? AND day BETWEEN ? AND ?",
            (day, tenant, day[:7] + "-01", day[:7] + "-31"),
        )
        return (0, 0) if row is None else (int(row[0]), int(row[1]))

    async def rows(self, tenant: str | None, first_day: str, last_day: str) -> list[UsageRow]:
        """Per tenant and model, summed over the days (all tenants when `tenant` is None)."""
        where = "day BETWEEN ? AND ?" + (" AND tenant = ?" if tenant is not None else "")
        args: tuple[str, ...] = (first_day, last_day) + ((tenant,) if tenant is not None else ())
        found = await self.db.fetch_all(
            "SELECT tenant, model, SUM(turns), SUM(prompt_tokens), SUM(completion_tokens), "
            f"SUM(cached_tokens) FROM token_usage WHERE {where} "
            "GROUP BY tenant, model ORDER BY tenant, model",
            args,
        )
        return [
            UsageRow(t, m, int(n), Tokens(int(p), int(c), int(k))) for t, m, n, p, c, k in found
        ]

    async def first_notice(self, tenant: str, period: str, at_ms: int) -> bool:
        """True the first time `period` (e.g. `daily:2027-01-15`) is noted for `tenant`
        (of two instances noting it at once, one)."""
        added = await self.db.execute(
            "INSERT INTO budget_notices (tenant, period, at_ms) VALUES (?, ?, ?)"
            " ON CONFLICT (tenant, period) DO NOTHING",
            (tenant, period, at_ms),
        )
        return added > 0


def recorded(tenant: str, model: str, day: str, tokens: Tokens, turns: int = 1) -> Unit[int]:
    """`UsageStore.record` as a unit of one statement, for a caller's transaction."""
    changed: int = yield execute(_RECORD, (tenant, model, day, turns, *_parts(tokens)))
    return changed


_RECORD = (
    "INSERT INTO token_usage (tenant, model, day, turns, prompt_tokens, completion_tokens,"
    " cached_tokens) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, day, model) DO UPDATE"
    " SET turns = token_usage.turns + excluded.turns,"
    " prompt_tokens = token_usage.prompt_tokens + excluded.prompt_tokens,"
    " completion_tokens = token_usage.completion_tokens + excluded.completion_tokens,"
    " cached_tokens = token_usage.cached_tokens + excluded.cached_tokens"
)


def _parts(tokens: Tokens) -> tuple[int, int, int]:
    return (tokens.prompt, tokens.completion, tokens.cached)
