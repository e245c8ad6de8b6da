"""Summaries of long conversations, written after the reply went out.

`Compactor.after_turn` is called once a turn is stored. When the session is
over its budget it starts a background task (off the reply's critical
path) that takes the plan from the store, asks the chat's backend for a
summary with the fixed prompt of `bridge.core.compaction` (everything sent
through the tenant's vault masker, the answer masked again and bounded) and
folds the turns into it. One summary per chat at a time (`KeyedLocks`); the
next message of the chat never waits for it. A summary's tokens are counted
in the tenant's usage under the chat's model name (as tokens, not a turn);
when the tenant's token budget is used up no summary is asked for. When the
budget is reached, the model fails, answers nothing or is the offline
stand-in, the oldest turns are dropped and counted instead (logged once per
run of failures). Either way `session.summarised` is audited with counts
only, never content.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from bridge.core.ask import read_answer
from bridge.core.compaction import Fold, bounded_summary, summary_limit, summary_request
from bridge.core.locks import KeyedLocks
from bridge.core.sessions import SessionKey, SessionStore
from bridge.core.usage import Tokens
from bridge.storage.errors import StorageError
from bridge.types.audit_sink import AuditSink
from bridge.types.backend import (
    Backend,
    BackendError,
    ChatMessage,
    Finish,
    ModelRequest,
    offline,
)
from bridge.types.masked import Masked

log = logging.getLogger(__name__)
Redact = Callable[[str], Masked]  # the tenant's masker: the session store takes only Masked
SHUTDOWN_WAIT_S = 5.0


class HeldModel(Protocol):
    """The chat's model while it is held: its configured name and its backend."""

    @property
    def name(self) -> str: ...

    @property
    def backend(self) -> Backend: ...


# holds the chat's model for the length of one summary (a reload never closes it under us)
HoldModel = Callable[[], AbstractAsyncContextManager[HeldModel]]


class SummaryMeter(Protocol):
    """Budgets and usage (bridge.core.budgets.UsageMeter)."""

    async def reached(self, tenant: str) -> object | None: ...

    async def record(self, tenant: str, model: str, tokens: Tokens, turns: int = 1) -> None: ...


class Compactor:
    def __init__(
        self,
        sessions: SessionStore,
        audit: AuditSink,
        *,
        shutdown_wait_s: float = SHUTDOWN_WAIT_S,
        meter: SummaryMeter | None = None,
    ) -> None:
        self._sessions = sessions
        self._audit = audit
        self._meter = meter
        self._wait_s = shutdown_wait_s
        self._locks: KeyedLocks[SessionKey] = KeyedLocks()
        self._tasks: set[asyncio.Task[None]] = set()
        self._failing = False  # the model failed last time: the log already said so

    def after_turn(self, key: SessionKey, hold: HoldModel, redact: Redact) -> None:
        """Start summarising in the background if the session is over its budget (the
        check reads no row right after the turn's append: `SessionStore.over_budget`)."""
        known = self._sessions.appended_over(key)
        if known is False:
            return
        task = asyncio.create_task(self._run(key, hold, redact, known is None))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def idle(self) -> None:
        """Wait until no summary is being written (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def aclose(self) -> None:
        """Give running summaries a moment, then cancel them (the next turn starts over)."""
        if not self._tasks:
            return
        _, pending = await asyncio.wait(set(self._tasks), timeout=self._wait_s)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)
            log.info("stopping: %d conversation summaries postponed", len(pending))

    async def _run(self, key: SessionKey, hold: HoldModel, redact: Redact, read: bool) -> None:
        try:
            if read and not await self._sessions.over_budget(key):
                return
        except StorageError as exc:
            log.error("could not read the session's size (%s); no summary now", exc)
            return
        try:
            async with self._locks.hold(key):
                fold = await self._sessions.fold_plan(key)
                if fold is not None:
                    async with hold() as model:
                        await self._compact(key, fold, model, redact)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("summarising a conversation failed; it stays as it is")

    async def _compact(self, key: SessionKey, fold: Fold, model: HeldModel, redact: Redact) -> None:
        summary = await self._summary(key, fold, model, redact)
        if summary:
            after, how = await self._sessions.fold(key, fold, summary), "summary"
        else:
            after, how = await self._sessions.drop(key, fold), "dropped"
        if after is None:
            return  # the session moved meanwhile (a reset, another process): nothing done
        details = {
            "channel": key.channel,
            "chat": key.chat,
            "how": how,
            "turns": fold.plan.turns,
            "chars_before": fold.chars_before,
            "chars_after": after,
        }
        await self._audit.emit("session.summarised", key.tenant, details)

    async def _summary(
        self, key: SessionKey, fold: Fold, model: HeldModel, redact: Redact
    ) -> Masked | None:
        """The masked, bounded summary; None (logged once) when the model cannot give one."""
        if offline(model.backend):
            return self._fallback("no model is configured")
        if self._meter is not None and await self._meter.reached(key.tenant) is not None:
            return self._fallback("the tenant's token budget is used up")
        limit = summary_limit(self._sessions.budget_chars)
        used = Usage()
        try:
            text = await ask_summary(model.backend, fold, limit, redact, key.tenant, used)
        except BackendError as exc:
            return self._fallback(f"the model failed: {exc.kind}")
        finally:
            if self._meter is not None and used.tokens.total:
                await self._meter.record(key.tenant, model.name, used.tokens, turns=0)
        if not text.strip():
            return self._fallback("the model sent an empty summary")
        self._failing = False
        # masked before the cut (no part of a value survives it) and after (the store's type)
        return redact(bounded_summary(redact(text), limit))

    def _fallback(self, reason: str) -> Masked | None:
        if not self._failing:
            log.warning(
                "a long conversation could not be summarised (%s); its oldest turns are "
                "dropped instead until a summary works again",
                reason,
            )
        self._failing = True
        return None


class Usage:
    """The tokens a summary's stream reported (its `Finish` events)."""

    def __init__(self) -> None:
        self.tokens = Tokens()

    def add(self, event: Finish) -> None:
        t = self.tokens
        self.tokens = Tokens(
            t.prompt + event.prompt_tokens,
            t.completion + event.completion_tokens,
            t.cached + event.cached_tokens,
        )


async def ask_summary(
    backend: Backend, fold: Fold, limit: int, redact: Redact, tenant: str, used: Usage
) -> str:
    """The model's summary of `fold` (bounded by `limit`); its tokens go into `used`."""
    system, ask = summary_request(fold.previous, fold.messages, limit)
    request = ModelRequest(
        redact(system), (ChatMessage("user", redact(ask.content)),), tenant=tenant
    )
    return await read_answer(backend, request, limit, used.add)
