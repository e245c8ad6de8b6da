"""The outcome judge in the daemon: a second opinion on follow-ups the lexical stage left neutral.

Off the reply's critical path: the skills observer hands a follow-up over
before the turn (`submit`, held) and releases it after the turn
(`release`); a background task asks the judge model then,
never awaited by a turn. Follow-ups that queue up while a request is in
flight go together into the next one (at most `judge_batch`, one tenant per
request). The same inputs are answered from a cache, never asked twice.
Each tenant has a daily cap (`[grading] judge_daily_cap` follow-ups per UTC
day, counted in SQLite; cache hits are free); the calls' tokens are counted
in the usage table under the judge's model name and a tenant over its token
budget is not judged. With no model configured (the offline backend) the
judge is off: logged once, follow-ups dropped, the lexical label stays.

A valid label (anything but one known word is ignored and counted) is
audited as `outcome.judged`; listeners (the skills observer) then move the
stored grade from the lexical label to the judged one, in the same batch
of audit events. Texts are masked with the tenant's vault masker before
they are queued; they live in memory only until judged.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Protocol

from bridge.core.budgets import UsageMeter
from bridge.core.config_sections import GradingSettings
from bridge.core.usage import utc_day
from bridge.grading.classify import Label
from bridge.grading.judge_client import JudgeClient
from bridge.grading.judge_prompt import JudgeItem, cache_key
from bridge.grading.judge_store import JudgeUsage
from bridge.grading.requests import is_request
from bridge.types.audit_sink import AuditSink, TurnEvents
from bridge.types.backend import Backend, offline
from bridge.types.tenant_dirs import TenantDirs

log = logging.getLogger(__name__)
CACHE_SIZE = 2048
MAX_HELD = 256  # follow-ups held for turns still running; the oldest dropped beyond it
MAX_READY = 64  # per tenant, waiting for the judge; the oldest dropped beyond it


@dataclass(frozen=True, slots=True)
class FollowUp:
    """One follow-up the lexical stage left neutral, and the turn it grades."""

    tenant: str
    channel: str
    prev_run_id: str  # the graded turn
    msg_id: str  # the follow-up
    item: JudgeItem
    skills: tuple[str, ...] = ()
    relevant: tuple[str, ...] = ()  # skills the graded request was about but did not use


Listener = Callable[[FollowUp, Label, TurnEvents], Awaitable[None]]


class Mask(Protocol):
    def mask(self, text: str) -> str: ...


class OutcomeJudge:
    def __init__(
        self,
        settings: GradingSettings,
        backend_of: Callable[[str | None], Backend],
        usage: JudgeUsage,
        audit: AuditSink,
        *,
        default_model: str = "default",
        meter: UsageMeter | None = None,
        clock: Callable[[], float],
        timeout_s: float = 60.0,
    ) -> None:
        self._backend_of, self._usage, self._audit = backend_of, usage, audit
        self._meter, self._clock, self._timeout_s = meter, clock, timeout_s
        self._masks: Callable[[TenantDirs], Mask] | None = None
        self._listeners: list[Listener] = []
        self._held: dict[tuple[str, str], FollowUp] = {}  # (tenant, msg_id)
        self._ready: dict[str, list[FollowUp]] = {}
        self._cache: OrderedDict[str, Label] = OrderedDict()
        self._task: asyncio.Task[None] | None = None
        self._said: set[str] = set()  # what was logged once
        self.configure(settings, default_model)

    def configure(self, settings: GradingSettings, default_model: str) -> None:
        """New settings (a reload): from the next request on."""
        self._settings = settings
        self._model = settings.judge_model or default_model
        self._said.discard("off")

    def use_masks(self, masks: Callable[[TenantDirs], Mask]) -> None:
        self._masks = masks

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def status(self) -> str:
        """ "on (model X)" or why the judge is off."""
        if self._settings.judge_daily_cap == 0:
            return "off ([grading] judge_daily_cap = 0)"
        if offline(self._backend_of(self._model)):
            return "off (no model configured: the offline backend)"
        return f"on (model {self._model})"

    def queued(self) -> tuple[int, int]:
        """Follow-ups held for turns still running, and released ones waiting for the judge."""
        return len(self._held), sum(len(q) for q in self._ready.values())

    def submit(self, follow_up: FollowUp, dirs: TenantDirs | None = None) -> bool:
        """Hold a follow-up for the judge (asked after `release`); False when not a request."""
        if self._settings.judge_daily_cap == 0 or not is_request(follow_up.item.next):
            return False
        if self._masks is not None and dirs is not None:
            m, it = self._masks(dirs), follow_up.item
            masked = JudgeItem(m.mask(it.previous), m.mask(it.reply), m.mask(it.next))
            follow_up = replace(follow_up, item=masked)
        self._held[(follow_up.tenant, follow_up.msg_id)] = follow_up
        while len(self._held) > MAX_HELD:
            del self._held[next(iter(self._held))]
        return True

    def release(self, tenant: str, msg_id: str) -> None:
        """The reply to `msg_id` went out: ask about its follow-up in the background."""
        held = self._held.pop((tenant, msg_id), None)
        if held is None:
            return
        ready = self._ready.setdefault(tenant, [])
        ready.append(held)
        del ready[:-MAX_READY]
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._work())

    async def drain(self) -> None:
        """Wait until every released follow-up is judged (tests, shutdown)."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def aclose(self) -> None:
        """Stop: held and queued follow-ups are dropped (their lexical label stays)."""
        self._held.clear()
        self._ready.clear()
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _work(self) -> None:
        while self._ready:
            tenant = next(iter(self._ready))
            queue, size = self._ready[tenant], self._settings.judge_batch
            batch, queue[:] = queue[:size], queue[size:]
            if not queue:
                del self._ready[tenant]
            try:
                await self._judge(tenant, batch)
            except Exception:  # the judge must never take grading down
                log.exception("grading judge: a batch of %d failed", len(batch))

    async def _judge(self, tenant: str, batch: list[FollowUp]) -> None:
        events = TurnEvents()
        todo: dict[str, list[FollowUp]] = {}
        for f in batch:
            hit = self._cache.get(cache_key(f.item))
            if hit is not None:
                self._cache.move_to_end(cache_key(f.item))
                await self._found(f, hit, True, events)
            else:
                todo.setdefault(cache_key(f.item), []).append(f)
        if todo:
            await self._ask(tenant, todo, events)
        await events.flush(self._audit)

    async def _ask(self, tenant: str, todo: dict[str, list[FollowUp]], events: TurnEvents) -> None:
        backend = self._backend_of(self._model)
        if offline(backend):
            self._once("off", "grading judge off: no model configured (offline backend)")
            return
        day = utc_day(self._clock())
        keys = list(todo)
        room = self._settings.judge_daily_cap - (await self._usage.day(tenant, day)).asked
        if room < len(keys):
            await self._usage.add(tenant, day, "capped", len(keys) - max(room, 0))
            self._once(f"cap:{tenant}:{day}", f"grading judge: daily cap reached for {tenant}")
            keys = keys[: max(room, 0)]
        if not keys or (self._meter is not None and await self._meter.reached(tenant) is not None):
            return
        await self._usage.add(tenant, day, "asked", len(keys))
        client = JudgeClient(backend, self._timeout_s)
        asked = await client.ask([todo[k][0].item for k in keys], tenant)
        if self._meter is not None and asked.tokens is not None:
            await self._meter.record(tenant, self._model, asked.tokens)
        if asked.error:
            log.warning("grading judge: no answer (%s) for %d follow-up(s)", asked.error, len(keys))
            return
        await self._usage.add(tenant, day, "ignored", asked.ignored)
        for key, label in zip(keys, asked.labels, strict=True):
            if label is None:
                continue
            self._remember(key, label)
            for f in todo[key]:
                await self._found(f, label, False, events)

    def _remember(self, key: str, label: Label) -> None:
        self._cache[key] = label
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)

    async def _found(self, f: FollowUp, label: Label, cached: bool, events: TurnEvents) -> None:
        details = {
            "label": label,
            "prev_run_id": f.prev_run_id,
            "msg_id": f.msg_id,
            "channel": f.channel,
            "cached": cached,
        }
        events.add("outcome.judged", f.tenant, details)
        for listener in self._listeners:
            await listener(f, label, events)

    def _once(self, key: str, message: str) -> None:
        if key not in self._said:
            self._said.add(key)
            log.info(message)
