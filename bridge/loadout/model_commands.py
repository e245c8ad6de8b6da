"""Chat commands for models and what they cost: /model and /usage.

`/model` lists the configured models (name, provider and model id - never a
server address or key) with this chat's marked; `/model NAME` switches this
chat (the `chat_settings` key `model`, per tenant, channel and chat; audited
`chat.model_set`), `/model default` goes back. `/usage` shows the tenant's
tokens today and this month (UTC) per model, cached tokens included, and
its budgets, with a warning from 80 % of one on. Nothing here talks to a model.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Protocol

from bridge.core.budgets import Budget, month_days, near_note
from bridge.core.commands import Command, CommandContext, Refused
from bridge.core.usage import UsageRow, UsageStore, utc_day
from bridge.loadout.chat_settings import ChatSettings
from bridge.types.audit_sink import AuditSink

KEY = "model"


class ModelChoices(Protocol):
    """The configured models (the app's registry)."""

    @property
    def default(self) -> str: ...

    def names(self) -> list[tuple[str, str]]: ...

    def chat_model(self, tenant: str, channel: str, chat: str) -> str: ...


class ModelCommands:
    def __init__(self, models: ModelChoices, chats: ChatSettings, audit: AuditSink) -> None:
        self._models, self._chats, self._audit = models, chats, audit

    def commands(self) -> Iterable[Command]:
        return (
            Command(
                "model",
                "/model [name]",
                "show this chat's model and the choices, or switch this chat",
                self.model,
                common=True,
            ),
        )

    def _listing(self, current: str) -> str:
        lines = [
            f"{'•' if name == current else ' '} {name} — {what}"
            for name, what in self._models.names()
        ]
        return "\n".join(lines)

    async def model(self, ctx: CommandContext, args: str) -> str:
        i = ctx.inbound
        current = self._models.chat_model(ctx.tenant, i.channel, i.chat)
        wanted = args.strip().lower()
        if not wanted:
            more = (
                "/model <name> switches this chat."
                if len(self._models.names()) > 1
                else "Only one model is configured; the operator adds more as "
                "[models.<name>] tables in roost's config."
            )
            return (
                f"This chat uses {current}. Models (• is this chat's):\n"
                + self._listing(current)
                + "\n"
                + more
            )
        known = dict(self._models.names())
        if wanted not in known:
            shown = wanted if len(wanted) <= 40 else wanted[:40] + "…"
            raise Refused(f"There is no model {shown!r}. Models:\n" + self._listing(current))
        if wanted == self._models.default:
            await self._chats.clear(ctx.tenant, i.channel, i.chat, KEY)
        else:
            await self._chats.set(ctx.tenant, i.channel, i.chat, KEY, wanted)
        details = {"model": wanted, "previous": current, "channel": i.channel, "chat": i.chat}
        await self._audit.emit("chat.model_set", ctx.tenant, details)
        return f"This chat now uses {wanted} ({known[wanted]}). Other chats keep theirs."


def _line(row: UsageRow) -> str:
    t = row.tokens
    turns = f"{row.turns:,} turn{'' if row.turns == 1 else 's'}"
    return f"  {row.model}: {t.prompt:,} in (cached {t.cached:,}), {t.completion:,} out — {turns}"


def _budget_line(budget: Budget, today: int, month: int) -> str:
    parts = []
    for label, limit, used in (("daily", budget.daily, today), ("monthly", budget.monthly, month)):
        if limit is not None:
            parts.append(f"{label} {used:,}/{limit:,} ({min(999, used * 100 // limit)}%)")
    return "Budgets: " + ("; ".join(parts) if parts else "none") + " (in + out tokens)."


class UsageCommands:
    def __init__(
        self,
        store: UsageStore,
        budget: Callable[[str], Budget],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store, self._budget, self._clock = store, budget, clock

    def commands(self) -> Iterable[Command]:
        return (
            Command(
                "usage",
                "/usage",
                "tokens used today and this month, per model, and your budgets",
                self.usage,
            ),
        )

    async def usage(self, ctx: CommandContext, args: str) -> str:
        day = utc_day(self._clock())
        first, last = month_days(day)
        lines = [f"Token usage of {ctx.tenant} (UTC):", f"Today ({day}):"]
        today = await self._store.rows(ctx.tenant, day, day)
        lines += [_line(r) for r in today] or ["  nothing yet"]
        lines.append(f"This month ({day[:7]}):")
        month = await self._store.rows(ctx.tenant, first, last)
        lines += [_line(r) for r in month] or ["  nothing yet"]
        total = sum(r.tokens.total for r in today), sum(r.tokens.total for r in month)
        budget = self._budget(ctx.tenant)
        lines.append(_budget_line(budget, *total))
        note = near_note(budget, *total)
        return "\n".join([*lines, note] if note else lines)
