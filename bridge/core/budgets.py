"""Token budgets per tenant, checked before a turn, and the meter that counts turns.

A tenant's budget is its `[tenants.X] daily_tokens` / `monthly_tokens`, else
the `[limits]` default (0 on a tenant: no budget). A budget counts in + out
tokens over the UTC day or the UTC month. Before a turn, `UsageMeter.refusal`
answers when a budget is used up: which budget, how much was used, when it
resets; no model is asked; from 80 % on, `near` is the warning /status and
/usage show. `budget.reached` is audited once per tenant per
period (remembered in the database, so a restart does not repeat it). The turn that
crosses a budget is not cut: a budget is checked before a turn, never during.

How exact a budget is: the figures are the database's (SQLite or PostgreSQL),
so instances on one database share each person's budget. This process's own
turns count at once; another process's or instance's (`roost style sweep`;
in the cluster design a person's turns go to the instance holding their
lease) within `REFRESH_S` (30 s) while the figure held here is under 80 % of
its budgets (what another instance spends within those 30 s is seen late),
and at every check from 80 % on. As before, turns that pass the
check at the same time (in any instance) all run, so a budget can be passed
by the tokens of the turns in flight.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Literal

from bridge.core.config import Settings
from bridge.core.usage import Tokens, UsageStore, recorded, utc_day
from bridge.storage.errors import StorageError
from bridge.storage.units import Made
from bridge.types.audit_sink import TurnEvents

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Budget:
    daily: int | None = None
    monthly: int | None = None


def budgets_of(settings: Settings) -> Callable[[str], Budget]:
    """The budget of each tenant under `settings` (tenant value, else the [limits] one)."""
    limits = settings.limits

    def budget(tenant: str) -> Budget:
        rule = settings.tenants.get(tenant)
        daily = rule.daily_tokens if rule and rule.daily_tokens is not None else None
        monthly = rule.monthly_tokens if rule and rule.monthly_tokens is not None else None
        return Budget(
            limits.daily_tokens if daily is None else (daily or None),
            limits.monthly_tokens if monthly is None else (monthly or None),
        )

    return budget


@dataclass(frozen=True, slots=True)
class Reached:
    which: Literal["daily", "monthly"]
    used: int
    limit: int
    period: str  # YYYY-MM-DD or YYYY-MM
    resets: datetime  # UTC


def month_days(day: str) -> tuple[str, str]:
    """First and last possible day of `day`'s month, as strings that compare right."""
    return day[:7] + "-01", day[:7] + "-31"


def next_reset(which: str, now: float) -> datetime:
    """The next UTC midnight, or the first of the next UTC month."""
    today = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    if which == "daily":
        return today + timedelta(days=1)
    if today.month == 12:
        return today.replace(year=today.year + 1, month=1, day=1)
    return today.replace(month=today.month + 1, day=1)


def reached(budget: Budget, today: int, month: int, now: float) -> Reached | None:
    """The first budget used up (daily before monthly), or None. Pure."""
    day = utc_day(now)
    if budget.daily is not None and today >= budget.daily:
        return Reached("daily", today, budget.daily, day, next_reset("daily", now))
    if budget.monthly is not None and month >= budget.monthly:
        return Reached("monthly", month, budget.monthly, day[:7], next_reset("monthly", now))
    return None


def _span(seconds: float) -> str:
    minutes = max(1, int(seconds // 60))
    days, hours, mins = minutes // 1440, minutes % 1440 // 60, minutes % 60
    if days:
        return f"{days} d {hours} h"
    return f"{hours} h {mins} min" if hours else f"{mins} min"


def refusal_text(r: Reached, now: float) -> str:
    """What the person reads instead of an answer."""
    when = "today (UTC)" if r.which == "daily" else f"this month ({r.period}, UTC)"
    resets = r.resets.strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"Your {r.which} token budget is used up: {r.used:,} of {r.limit:,} tokens {when}. "
        f"It resets at {resets} (in {_span(r.resets.timestamp() - now)}). "
        "No model was asked. /usage shows the figures; the operator can raise the budget."
    )


NEAR_PERCENT = 80  # from here on, /status and /usage say a budget is nearly used up


def near_note(budget: Budget, today: int, month: int) -> str:
    """A line per budget at 80 % or more ('' when none is). Pure."""
    lines = []
    for which, limit, used, span in (
        ("daily", budget.daily, today, "today (UTC)"),
        ("monthly", budget.monthly, month, "this month (UTC)"),
    ):
        if limit is None or used * 100 < limit * NEAR_PERCENT:
            continue
        state = "used up" if used >= limit else "nearly used up"
        lines.append(
            f"⚠ Your {which} token budget is {state}: {used:,} of {limit:,} tokens "
            f"({used * 100 // limit}%) {span}."
        )
    return "\n".join(lines)


REFRESH_S = 30.0  # another process's usage of a tenant under 80 % is seen within this


@dataclass(slots=True)
class _Seen:
    """A budgeted tenant's figures: read from the database, plus this process's writes."""

    day: str
    today: int
    month: int
    read_at: float  # the meter's clock when the database was read


class UsageMeter:
    """Counts each turn's tokens and refuses turns over budget.

    A turn costs one statement: the usage upsert (`counted`: inside the turn's
    session append, one transaction). The budget check reads a
    figure kept per budgeted tenant (nothing for a tenant without a budget):
    read from the database on the tenant's first check of the day, kept
    exact by this process's own writes (a tenant's write and read are
    serialised by its lock), and read again when it is older than
    `refresh_s` (what another process or instance counted) or at 80 % or
    more of a budget (every check then reads: exact where it matters).
    """

    def __init__(
        self,
        store: UsageStore,
        budgets: Callable[[str], Budget],
        clock: Callable[[], float] = time.time,
        *,
        refresh_s: float = REFRESH_S,
    ) -> None:
        self.store, self._budgets, self._clock = store, budgets, clock
        # tenant -> its budget, asked of `budgets` once (twice a turn otherwise, about 2 us
        # each: the tenant's rule looked up and a Budget made); cleared on reload
        self._budget_of: dict[str, Budget] = {}
        self._refresh_s = refresh_s
        self._seen: dict[str, _Seen] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.reads = 0  # database reads of figures (for tests and the bench)

    def set_budgets(self, budgets: Callable[[str], Budget]) -> None:
        """Reloaded budgets, from the next turn on."""
        self._budgets = budgets
        self._budget_of.clear()
        self._seen.clear()

    def budget(self, tenant: str) -> Budget:
        known = self._budget_of.get(tenant)
        if known is None:
            known = self._budget_of[tenant] = self._budgets(tenant)
        return known

    def _lock(self, tenant: str) -> asyncio.Lock:
        lock = self._locks.get(tenant)
        if lock is None:
            lock = self._locks[tenant] = asyncio.Lock()
        return lock

    def _fresh(self, tenant: str, budget: Budget, day: str, now: float) -> _Seen | None:
        seen = self._seen.get(tenant)
        if seen is None or seen.day != day or not 0 <= now - seen.read_at < self._refresh_s:
            return None
        if near_note(budget, seen.today, seen.month):  # near a limit: read every time
            return None
        return seen

    async def _used(self, tenant: str, budget: Budget, now: float) -> tuple[int, int]:
        """In + out tokens of `tenant` today and this month (UTC)."""
        day = utc_day(now)
        seen = self._fresh(tenant, budget, day, now)
        if seen is None:
            async with self._lock(tenant):
                seen = self._fresh(tenant, budget, day, now)
                if seen is None:
                    self.reads += 1
                    seen = _Seen(day, *await self.store.used_now(tenant, day), now)
                    self._seen[tenant] = seen
        return seen.today, seen.month

    async def reached(self, tenant: str) -> Reached | None:
        budget = self.budget(tenant)
        if budget.daily is None and budget.monthly is None:
            return None
        now = self._clock()
        return reached(budget, *await self._used(tenant, budget, now), now)

    async def near(self, tenant: str) -> str:
        """The warning when a budget of `tenant` is 80 % used or more, else ''."""
        budget = self.budget(tenant)
        if budget.daily is None and budget.monthly is None:
            return ""
        return near_note(budget, *await self._used(tenant, budget, self._clock()))

    async def refusal(self, tenant: str, events: TurnEvents) -> str | None:
        """The reply when a budget is used up (audited once per period), else None."""
        found = await self.reached(tenant)
        if found is None:
            return None
        now = self._clock()
        if await self.store.first_notice(tenant, f"{found.which}:{found.period}", int(now * 1000)):
            details = {
                "budget": found.which,
                "used": found.used,
                "limit": found.limit,
                "period": found.period,
            }
            events.add("budget.reached", tenant, details)
        return refusal_text(found, now)

    async def counted(
        self, tenant: str, model: str, tokens: Tokens, write: Callable[[Made[int]], Awaitable[bool]]
    ) -> bool:
        """Count one turn inside another write: `write(unit)` runs the count's unit in its own
        transaction and says whether it committed (False: nothing counted, the caller
        counts with `record`). The tenant's figure is kept as `record` keeps it."""
        day = utc_day(self._clock())
        unit = partial(recorded, tenant, model, day, tokens)
        budget = self.budget(tenant)
        if budget.daily is None and budget.monthly is None:
            return await write(unit)
        async with self._lock(tenant):  # not between a read of the figure and its use
            if not await write(unit):
                return False
            self._counted(tenant, day, tokens)
            return True

    def _counted(self, tenant: str, day: str, tokens: Tokens) -> None:
        """This process's own count, added to the tenant's kept figure (under its lock)."""
        seen = self._seen.get(tenant)
        if seen is not None and seen.day == day:
            seen.today += tokens.total
            seen.month += tokens.total

    async def record(self, tenant: str, model: str, tokens: Tokens, turns: int = 1) -> None:
        """Count one turn (`turns=0`: a summary's tokens); a database that cannot write is
        logged, the answer still goes out."""
        day = utc_day(self._clock())
        budget = self.budget(tenant)
        try:
            if budget.daily is None and budget.monthly is None:
                await self.store.record(tenant, model, day, tokens, turns)
                return
            async with self._lock(tenant):  # not between a read of the figure and its use
                await self.store.record(tenant, model, day, tokens, turns)
                self._counted(tenant, day, tokens)
        except StorageError as exc:
            log.error("usage not counted (%s): tenant %s, model %s", exc, tenant, model)
