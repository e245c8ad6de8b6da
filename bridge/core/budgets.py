"""Token budgets per tenant, checked before a turn, and the meter that counts turns.

A tenant's budget is its `[tenants.X] daily_tokens` / `monthly_tokens`, else
the `[limits]` default (0 on a tenant: no budget). A budget counts in + out
tokens over the UTC day or the UTC month. Before a turn, `UsageMeter.refusal`
answers when a budget is used up: which budget, how much was used, when it
resets; no model is asked; from 80 % on, `near` is the warning /status and
/usage show. `budget.reached` is audited once per tenant per
period (remembered in SQLite, so a restart does not repeat it). The turn that
crosses a budget is not cut: a budget is checked before a turn, never during.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from bridge.core.config import Settings
from bridge.core.usage import Tokens, UsageStore, utc_day
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


class UsageMeter:
    """Counts each turn's tokens and refuses turns over budget."""

    def __init__(
        self,
        store: UsageStore,
        budgets: Callable[[str], Budget],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store, self._budgets, self._clock = store, budgets, clock

    def set_budgets(self, budgets: Callable[[str], Budget]) -> None:
        """Reloaded budgets, from the next turn on."""
        self._budgets = budgets

    def budget(self, tenant: str) -> Budget:
        return self._budgets(tenant)

    def _used(self, tenant: str, budget: Budget, now: float) -> tuple[int, int]:
        """In + out tokens of `tenant` today and this month (0 for a budget not set)."""
        day = utc_day(now)
        today = self.store.used(tenant, day, day) if budget.daily is not None else 0
        month = self.store.used(tenant, *month_days(day)) if budget.monthly is not None else 0
        return today, month

    def reached(self, tenant: str) -> Reached | None:
        budget = self._budgets(tenant)
        if budget.daily is None and budget.monthly is None:
            return None
        now = self._clock()
        return reached(budget, *self._used(tenant, budget, now), now)

    def near(self, tenant: str) -> str:
        """The warning when a budget of `tenant` is 80 % used or more, else ''."""
        budget = self._budgets(tenant)
        if budget.daily is None and budget.monthly is None:
            return ""
        return near_note(budget, *self._used(tenant, budget, self._clock()))

    async def refusal(self, tenant: str, events: TurnEvents) -> str | None:
        """The reply when a budget is used up (audited once per period), else None."""
        found = self.reached(tenant)
        if found is None:
            return None
        now = self._clock()
        if self.store.first_notice(tenant, f"{found.which}:{found.period}", int(now * 1000)):
            details = {
                "budget": found.which,
                "used": found.used,
                "limit": found.limit,
                "period": found.period,
            }
            events.add("budget.reached", tenant, details)
        return refusal_text(found, now)

    def record(self, tenant: str, model: str, tokens: Tokens, turns: int = 1) -> None:
        """Count one turn (`turns=0`: a summary's tokens); a database that cannot write is
        logged, the answer still goes out."""
        try:
            self.store.record(tenant, model, utc_day(self._clock()), tokens, turns)
        except sqlite3.Error as exc:
            log.error("usage not counted (%s): tenant %s, model %s", exc, tenant, model)
