"""One model turn: session in, prompt built, agent run, exchange stored.

`TurnRunner` loads the chat's session, asks the prompt source for this
turn's system prompt (a frozen snapshot of the loadout), collects the tools
every source offers, runs the agent loop and stores the exchange with its
tool-call steps; a message that replies to another gets the quoted text put
before it. Files that came with the message are prepared by the injected
`Senses` (`bridge.core.perceive`) before the model is asked: their text goes
before the person's, images with it (the history keeps only the text), or
the turn is refused with the reason; files a tool wrote into `outputs/`
during the turn go out with the reply. Once stored, an over-budget session is summarised in the
background (`Compactor`). A backend
failure becomes a short reply and stores nothing the model sees, so the person
can retry (the history they read keeps it: `SessionStore.failed`). So does the
answer of the offline backend (no model configured, told by the backend's name,
never by its text: `_no_model`): it is shown, and kept for the page as a failed
turn is, but never stored in the session, so once a model is configured none is
sent it, and no observer grades or learns from it, nor is it indexed; a turn that
fails (the backend or anything else) after its tools changed something still
ends its error reply with their notices and offers their undo actions, as an
answer does, so a memory saved before the failure is not hidden;
a turn cancelled at shutdown is audited as `message.failed` kind `cancelled`, and
once `Core.drain` said the daemon stops (`closing`), one cut in its model call is kept
for the page's history as a failed turn is (`CUT`, the person's message and Retry:
nothing else will answer it), unless its channel answers the message again after the
restart (`resent`: a push channel's durable inbox); nothing of it goes into the session;
one the person stopped (`bridge.core.running`) keeps what was shown, marked
"… [stopped]", and is audited with kind `stopped`.
When the session store cannot write (a full disk), the answer is still sent,
with a note that it was not stored; grading and the turn's audit batch that
meet a full disk are logged and skipped (`_kept`), never the answer. The
audit batch is queued before the turn's tokens are counted and the exchange
is stored, so those writes run while the audit writer syncs the batch
(`TurnEvents.begin`), and so does the look for the files its tools wrote into
`outputs/`; the turn returns once all are done. The turn's end is ONE unit of
the database (`_end`): the usage count, the session append and the observers'
rows (`EndWrite`, the turn log) commit together, one job on SQLite's writer.
Observers (outcome grading, skills) hook in before and after.
The model is a per-turn choice: `pick` (injected by the app) gives the
chat's named model for the length of the turn, so a reload never swaps a
backend under a running turn. A `meter` refuses a turn over its tenant's
token budget before any model is asked, and counts each turn's tokens (a
turn that fails mid-way counts the steps that completed, `AgentFailed`).

The tenant's masker (`masks`, the vault's) is the one masking point: the
agent loop's `redact` on the way to the model, the stream masker on deltas,
the notices, and everything stored: the session store takes only `Masked`
text (`bridge.types.masked`), so the message, the tool steps and the answer
are masked right before they are written. Texts a screen refused to keep
this turn (`TurnContext.refused`, e.g. a `memory_save` that held a
password) make the turn's masker mask their secrets too (`OutputMask.also`),
wherever the turn is stored: the person's message, the tool steps (the
refused arguments), the answer, and so the summary, the archive and exports.
The turn holds ONE masker (`bridge.core.turn_mask.TurnMask`) that learns each
refusal as it is recorded, so every branch masks with what is refused so far:
the deltas streamed after a refusal and the tool card, the answered turn, the
one the person stopped and the one whose model failed (`SessionStore.failed`).
A tool step is stored with its calls' names and ids masked too.
A scheduled job's run keeps its msg_id (`job:<id>:<slot>`) in its prompt row's
`meta` too (`_sent`, `bridge.core.shown.run_of`): the conversation archive copies `meta`
and no msg_id, so an archived page tells a run by it, never by its text.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import sqlite3
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Protocol, TypeVar, runtime_checkable

from bridge.core.agent import (
    MAX_REPLY_CHARS,
    AgentFailed,
    AgentResult,
    run_agent,
)
from bridge.core.compactor import Compactor
from bridge.core.diskfull import DISK_FULL, disk_full
from bridge.core.end_writes import EndWrite
from bridge.core.history import bounded_steps, quote_chars, with_quote
from bridge.core.mask_memo import MaskMemo
from bridge.core.masks import OutputMask
from bridge.core.perceive import NOTHING, Prepared, Senses, attachment_meta
from bridge.core.running import stop_requested, stopped_changes, stopped_text
from bridge.core.sessions import Session, SessionKey, SessionStore
from bridge.core.shown import sent_meta, with_run
from bridge.core.turn_mask import TurnMask
from bridge.core.unreachable import DATABASE_DOWN, database_down
from bridge.core.usage import Tokens
from bridge.storage.errors import StorageError
from bridge.storage.units import Made
from bridge.types.audit_sink import AuditSink, TurnEvents
from bridge.types.backend import Backend, BackendError, ChatMessage, offline
from bridge.types.masked import Masked
from bridge.types.messages import DeltaSink, Final, Inbound, OutFile
from bridge.types.progress import ModelInfo, ProgressSink
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import PreparedSource, Tool, ToolSource, TurnContext

log = logging.getLogger(__name__)
T = TypeVar("T")
CUT = "Not answered: roost was stopped or restarted while it worked on this. Send it again."
NOT_STORED = (
    "(I could not store this exchange: the disk may be full. This answer is not in "
    "our conversation history, so I will not remember it next time.)"
)


class PromptSource(Protocol):
    def system_prompt(self, turn: TurnContext) -> str: ...


@runtime_checkable
class StablePrefixSource(Protocol):
    """A prompt source that knows how long its byte-stable prefix is (prompt caching)."""

    def system_prompt_parts(self, turn: TurnContext) -> tuple[str, int]: ...


class ExchangeLog(Protocol):
    """Where a stored exchange is also indexed for search (bridge.recall's Indexer)."""

    def record_exchange(
        self,
        dirs: TenantDirs,
        channel: str,
        chat: str,
        msg_id: str,
        asked: str,
        answer: str,
        at: float,
        name: str = "",
    ) -> None: ...

    async def unindex(
        self, dirs: TenantDirs, channel: str, chat: str, started: float, archived: float
    ) -> int:
        """Take out what a chat's conversation deleted by its person said (its span)."""
        ...


class TurnObserver(Protocol):
    """Hooks around a turn; their audit events go into the turn's batch."""

    async def before_turn(
        self, turn: TurnContext, session: Session, events: TurnEvents
    ) -> EndWrite | None:
        """None, or a write for however the turn ends: in its end's unit, or alone when it
        ends without one (failed, stopped, cancelled: e.g. the previous turn's graded mark)."""

    async def after_turn(
        self, turn: TurnContext, result: AgentResult, events: TurnEvents
    ) -> EndWrite | None:
        """None, or a write for the turn's end (its session append's unit)."""


@dataclass(frozen=True, slots=True)
class ChosenModel:
    """The model a turn runs on: its configured name and its backend."""

    name: str
    backend: Backend


PickModel = Callable[[TurnContext], AbstractAsyncContextManager[ChosenModel]]
"""The chat's model for one turn, held until the turn ends (the app's model registry)."""


class TurnMeter(Protocol):
    """Token budgets and usage counting (bridge.core.budgets.UsageMeter)."""

    async def refusal(self, tenant: str, events: TurnEvents) -> str | None: ...

    async def record(self, tenant: str, model: str, tokens: Tokens) -> None: ...

    async def counted(
        self, tenant: str, model: str, tokens: Tokens, write: Callable[[Made[int]], Awaitable[bool]]
    ) -> bool: ...


@dataclass(frozen=True, slots=True)
class TurnSettings:
    max_steps: int = 8
    max_reply_chars: int = MAX_REPLY_CHARS


class TurnRunner:
    def __init__(
        self,
        *,
        backend: Backend,
        sessions: SessionStore,
        prompt: PromptSource,
        tool_sources: Sequence[ToolSource],
        audit: AuditSink,
        masks: Callable[[TenantDirs], OutputMask],
        clock: Callable[[], float] = time.time,
        settings: TurnSettings | None = None,
        observers: Sequence[TurnObserver] = (),
        user_note: Callable[[TurnContext], str] | None = None,
        pick: PickModel | None = None,
        meter: TurnMeter | None = None,
        compactor: Compactor | None = None,
        senses: Senses | None = None,
        exchanges: ExchangeLog | None = None,
        ensure: Callable[[TenantDirs], object] = TenantDirs.ensure,
    ) -> None:
        self.backend = backend
        self._ensure = ensure  # the tenant's tree made sure of (`bridge.core.dirs_memo`)
        self._exchanges = exchanges  # every stored exchange is indexed too (recall)
        self._senses = senses  # attachments in, files from outputs/ out (bridge.senses)
        self._pick = pick or self._only_backend
        self._meter = meter
        self.sessions = sessions
        self._prompt = prompt
        self._sources = tuple(tool_sources)
        # runtime Protocol checks cost ~20 us each: made once here, not on every turn
        self._prepared = tuple(s for s in self._sources if isinstance(s, PreparedSource))
        self._stable = prompt if isinstance(prompt, StablePrefixSource) else None
        self._audit = audit
        self._clock = clock
        self._settings = settings or TurnSettings()
        self._observers = tuple(observers)
        self._masks = masks
        self._note = user_note  # put before the newest message only (the date, time)
        self._notes: dict[str, tuple[ChatMessage]] = {}  # a note -> its message
        self._masked = MaskMemo()  # what the agent loop masked, for the next turns
        self.compactor = compactor or Compactor(sessions, audit)
        self._closing = False  # the daemon stops: a cancelled turn was cut by it (`closing`)

    def closing(self) -> None:
        """The daemon stops (`Core.drain`, before it cancels what still runs): a turn
        cancelled from now on, and not stopped by its person, was cut by the shutdown."""
        self._closing = True

    @asynccontextmanager
    async def _only_backend(self, turn: TurnContext) -> AsyncIterator[ChosenModel]:
        yield ChosenModel("default", self.backend)

    def set_settings(self, settings: TurnSettings) -> None:
        """Reloaded step and reply limits; a turn already running keeps the old ones."""
        self._settings = settings

    async def run(
        self,
        inbound: Inbound,
        dirs: TenantDirs,
        key: SessionKey,
        on_delta: DeltaSink | None,
        on_progress: ProgressSink | None = None,
        *,
        resent: bool = False,
    ) -> Final:
        """Run one turn; `resent`: its channel answers the message again after a restart
        (a push channel's durable inbox), so a shutdown that cuts it keeps nothing."""
        ends: list[EndWrite] = []  # the observers' writes, until the turn's end takes them
        turn = TurnContext(dirs, inbound, self._clock)
        try:
            return await self._run(inbound, dirs, key, on_delta, on_progress, turn, ends, resent)
        except Exception as exc:
            if not (turn.notices or turn.actions):
                raise  # nothing changed: the core says it failed (`Core._guarded`)
            return self._failed_after_changes(turn, exc)
        finally:  # ended without its end's unit (failed, stopped, cancelled): each alone
            await self._alone(ends)

    def _failed_after_changes(self, turn: TurnContext, exc: Exception) -> Final:
        """A turn that failed after its tools changed something: the failure as the core
        says it, with the changes' notices and undo actions, as an answer carries them."""
        mask = TurnMask(self._masks(turn.dirs), turn.refused)
        if disk_full(exc):
            log.error("disk full (channel %s): %s", turn.inbound.channel, exc)
            said = DISK_FULL
        elif database_down(exc):
            log.error("database unreachable (channel %s): turn failed", turn.inbound.channel)
            said = DATABASE_DOWN
        else:
            ref, trace = secrets.token_hex(4), "".join(traceback.format_exception(exc))
            channel = turn.inbound.channel
            log.error("message failed (ref %s, channel %s)\n%s", ref, channel, mask.mask(trace))
            said = f"Something went wrong on my side (ref {ref}). Please try again."
        return _failure(said, turn, mask)

    async def _run(
        self,
        inbound: Inbound,
        dirs: TenantDirs,
        key: SessionKey,
        on_delta: DeltaSink | None,
        on_progress: ProgressSink | None,
        turn: TurnContext,
        ends: list[EndWrite],
        resent: bool = False,
    ) -> Final:
        started = time.perf_counter()
        shown: list[str] = []  # what the person saw, kept if they stop the turn
        on_delta = _showing(on_delta, shown)
        self._ensure(dirs)
        events = TurnEvents()
        events.add("message.received", dirs.tenant, _received(inbound))
        session = await self.sessions.load(key, self._clock())
        refused = await self._over_budget(dirs.tenant, events)
        if refused is not None:
            return refused
        prepared = await self._senses.prepare(turn) if self._senses is not None else NOTHING
        if prepared.refusal:  # nothing of what was sent could be read: say why, ask no model
            await events.flush(self._audit)
            return Final(prepared.refusal, "refusal")
        for observer in self._observers:  # as `_kept`, without a coroutine per observer
            try:
                end = await observer.before_turn(turn, session, events)
            except (OSError, sqlite3.Error, StorageError) as exc:
                _not_written("grading before the turn", exc)
                end = None
            if end is not None:
                ends.append(end)
        mask = TurnMask(self._masks(dirs), turn.refused)  # learns each refusal of the turn
        lead = mask.mask(prepared.lead())
        if lead:
            await on_delta(lead)
        try:
            result, model, offline = await self._on_model(
                turn, session, mask, on_delta, on_progress, prepared
            )
        except BackendError as exc:
            log.warning("model backend failed: %s", exc.kind)
            failed = _failure(exc.user_message, turn, mask)  # with what its tools changed
            await self._keep_failure(key, inbound, prepared, mask, failed.text)
            details = {"channel": inbound.channel, "kind": exc.kind}
            events.add("message.failed", dirs.tenant, details)
            await events.flush(self._audit)
            return failed
        except asyncio.CancelledError:
            # cancelled at shutdown (Core.drain): the chain says so, then the
            # cancellation goes on; nothing was answered or stored in the session,
            # and the page's history keeps the message as a failed turn (`CUT`)
            # unless its channel answers it again after the restart. Stopped by
            # the person: what they saw is stored, marked, before it goes on.
            stopped = stop_requested()
            if not stopped and self._closing and not resent:
                cut = _failure(CUT, turn, mask)  # with what its tools changed
                await self._keep_failure(key, inbound, prepared, mask, cut.text)
            if stopped:
                kept = stopped_text("".join(shown))
                if turn.notices:  # a memory saved before the stop: said, with its undo
                    changes = mask.mask("\n".join(turn.notices))
                    stopped_changes(changes, tuple(turn.actions))
                    kept = f"{kept}\n\n{changes}"
                asked = prepared.asked(with_quote(inbound.text, inbound.quoted))
                asked_m, kept_m = mask.mask(asked), mask.mask(kept)
                if await self._store(
                    key, asked_m, kept_m, inbound.msg_id, (), _sent(inbound, mask)
                ):
                    self._indexed(dirs, inbound, asked_m, kept_m)
            kind = "stopped" if stopped else "cancelled"
            events.add("message.failed", dirs.tenant, {"channel": inbound.channel, "kind": kind})
            await events.flush(self._audit)
            raise
        text = result.text.strip() or "(The model sent an empty answer. Please try again.)"
        if turn.notices:
            text = await _with_notices(text, turn.notices, mask, on_delta)
        if offline:  # no model configured: shown, never stored, graded or learned from
            ms = int((time.perf_counter() - started) * 1000)
            kept = await self._no_model(turn, key, prepared, mask, lead + text)
            events.add("message.answered", dirs.tenant, _answered(inbound, kept, ms, result))
            await events.flush(self._audit)
            return Final(kept, "answer", actions=tuple(turn.actions), unstored=True)
        answer = mask.mask(lead + text)
        asked = mask.mask(prepared.asked(with_quote(inbound.text, inbound.quoted)))
        steps = tuple(mask.message(m) for m in bounded_steps(result.tool_steps))
        for observer in self._observers:
            try:
                end = await observer.after_turn(turn, result, events)
            except (OSError, sqlite3.Error, StorageError) as exc:
                _not_written("grading after the turn", exc)
                end = None
            if end is not None:
                ends.append(end)
        ms = int((time.perf_counter() - started) * 1000)
        events.add("message.answered", dirs.tenant, _answered(inbound, answer, ms, result))
        stored = False
        files: tuple[OutFile, ...] = ()
        durable = await events.begin(self._audit)  # queued: the writer starts on it now
        try:  # the tokens are counted and the exchange stored while the writer syncs it
            stored = await self._end(
                turn, model, result, ends, key, asked, answer, steps, _sent(inbound, mask), mask
            )
            try:  # the files its tools wrote into outputs/, looked for while it syncs too
                if self._senses is not None:
                    files = self._senses.handed_out(turn, prepared)
            finally:  # done only once its records are durable, stored or not
                await _kept("the turn's audit records", durable)
        finally:  # queued after the audit batch: the index write keeps off the reply's path
            if not durable.done():  # cancelled meanwhile: the batch is written all the same
                durable.cancel()
            elif not durable.cancelled():
                durable.exception()  # retrieved (raised above when it was awaited)
            if stored:
                self._indexed(dirs, inbound, asked, answer)
        text = answer
        if not stored:
            text += "\n\n" + NOT_STORED
            if on_delta is not None:
                await on_delta("\n\n" + NOT_STORED)
        if stored:  # an over-budget session is summarised in the background
            hold = partial(self._hold_model, turn)
            self.compactor.after_turn(key, hold, mask.masker_now().mask)
        actions = tuple(turn.actions)
        return Final(text, "answer", files=files, actions=actions, unstored=not stored)

    @asynccontextmanager
    async def _hold_model(self, turn: TurnContext) -> AsyncIterator[ChosenModel]:
        """The chat's model, held (for a background summary of this chat)."""
        async with self._pick(turn) as model:
            yield model

    async def _over_budget(self, tenant: str, events: TurnEvents) -> Final | None:
        """The refusal when the tenant's token budget is used up (no model is asked)."""
        refused = await self._meter.refusal(tenant, events) if self._meter else None
        if refused is None:
            return None
        await events.flush(self._audit)
        return Final(refused, "refusal")

    async def _on_model(
        self,
        turn: TurnContext,
        session: Session,
        mask: TurnMask,
        on_delta: DeltaSink | None,
        on_progress: ProgressSink | None = None,
        prepared: Prepared = NOTHING,
    ) -> tuple[AgentResult, str, bool]:
        """The agent loop on the chat's model (held for the turn), the model's name and
        whether it is the offline backend (no model configured); the tokens of a failed
        loop are counted here, those of an answer by the caller, while the turn's audit
        batch syncs."""
        async with self._pick(turn) as model:
            if on_progress is not None:
                await on_progress(ModelInfo(model.backend.describe()))
            try:
                result = await self._agent(
                    turn, session, mask, on_delta, model.backend, on_progress, prepared
                )
            except AgentFailed as exc:  # the steps that completed used tokens too
                await self._count(turn.tenant, model.name, exc.partial, failed=True)
                raise
        return result, model.name, offline(model.backend)

    async def _count(
        self, tenant: str, model: str, result: AgentResult, failed: bool = False
    ) -> None:
        if self._meter is None:
            return
        tokens = Tokens(result.prompt_tokens, result.completion_tokens, result.cached_tokens)
        if tokens.total or not failed:
            await self._meter.record(tenant, model, tokens)

    async def _end(
        self,
        turn: TurnContext,
        model: str,
        result: AgentResult,
        ends: list[EndWrite],
        key: SessionKey,
        asked: Masked,
        text: Masked,
        steps: Sequence[ChatMessage],
        sent: Masked,
        mask: TurnMask | None = None,
    ) -> bool:
        """The turn's end in ONE unit: its tokens counted, the exchange stored, the observers'
        writes (`ends`); whether it was stored. When the unit cannot commit, nothing of it
        is written: the tokens are counted and the observers' rows written each alone.
        `ends` is emptied once written (what is left is written alone by `run`). `mask`:
        the turn's, which masked `asked`, `text` and `steps` (see `_store`)."""
        units = [e.unit for e in ends]
        msg_id = turn.inbound.msg_id

        async def store(*more: Made[object]) -> bool:
            also = (*more, *units)
            return await self._store(key, asked, text, msg_id, steps, sent, also, mask)

        if self._meter is None:
            stored = await store()
        else:
            tokens = Tokens(result.prompt_tokens, result.completion_tokens, result.cached_tokens)
            stored = await self._meter.counted(turn.tenant, model, tokens, store)
            if not stored:
                await self._meter.record(turn.tenant, model, tokens)
        if not stored:
            await self._alone(ends)
        ends.clear()
        return stored

    async def _alone(self, ends: list[EndWrite]) -> None:
        """The observers' writes of a turn that ends without its end's unit, each alone."""
        while ends:
            await _kept("grading around the turn", ends.pop(0).alone())

    async def _store(
        self,
        key: SessionKey,
        asked: Masked,
        text: Masked,
        msg_id: str,
        steps: Sequence[ChatMessage],
        sent: Masked | None = None,
        also: Sequence[Made[object]] = (),
        mask: TurnMask | None = None,
    ) -> bool:
        """Store the exchange (and `also`, in its unit); False (logged) when the store cannot
        write, e.g. a full disk. `mask`, the turn's that masked the exchange: the stored
        messages (the objects the session's cached history hands out next) are kept as
        masked by its masker of now (`MaskMemo.masked_already`), so the next turn does not
        mask them again while the masker is the same."""
        try:
            stored = await self.sessions.append(
                key, asked, text, msg_id, self._clock(), steps, sent, also
            )
        except (OSError, sqlite3.Error, StorageError) as exc:
            log.error("session store write failed (%s); the answer is sent unstored", exc)
            return False
        if mask is not None:
            self._masked.masked_already(stored, mask.mask)
        return True

    async def _keep_failure(
        self,
        key: SessionKey,
        inbound: Inbound,
        prepared: Prepared,
        mask: OutputMask,
        told: str,
    ) -> None:
        """Keep a failed turn (or the offline answer) for the history the person reads
        (never for the model); a scheduled job's is not kept: its chat was told by the
        job's post or failure notice (`bridge.schedule.runtime`), and its prompt is not
        the person's message."""
        if inbound.scheduled:
            return
        asked = mask.mask(prepared.asked(with_quote(inbound.text, inbound.quoted)))
        sent, said = _sent(inbound, mask), mask.mask(told)
        try:
            await self.sessions.failed(key, asked, sent, said, self._clock())
        except (OSError, sqlite3.Error, StorageError) as exc:
            log.error("the failed turn was not kept for the history (%s)", exc)

    async def _no_model(
        self,
        turn: TurnContext,
        key: SessionKey,
        prepared: Prepared,
        mask: TurnMask,
        said: str,
    ) -> Masked:
        """The offline backend's answer (no model is configured): the person is shown it,
        and the page's history keeps it as it keeps a failed turn (`_keep_failure`), but the
        session never stores it, so no model is sent it once one is configured; and as
        nothing is stored, the observers' `after_turn` (skills, the turn log the next
        message grades, the judge), the search index and the summary never see it. What
        the person was shown, masked."""
        answer = mask.mask(said)
        await self._keep_failure(key, turn.inbound, prepared, mask, answer)
        return answer

    def _indexed(self, dirs: TenantDirs, inbound: Inbound, asked: str, text: str) -> None:
        """Hand the stored (masked) exchange to the search index, when one is wired."""
        if self._exchanges is not None:
            self._exchanges.record_exchange(
                dirs,
                inbound.channel,
                inbound.chat,
                inbound.msg_id,
                asked,
                text,
                self._clock(),
                inbound.display_name or "",
            )

    async def _agent(
        self,
        turn: TurnContext,
        session: Session,
        mask: TurnMask,
        on_delta: DeltaSink | None,
        backend: Backend,
        on_progress: ProgressSink | None = None,
        prepared: Prepared = NOTHING,
    ) -> AgentResult:
        """The agent loop over this turn's prompt and tools, deltas masked on the way out."""
        system, stable = self._system(turn, mask)

        for source in self._prepared:  # what a source offers from stored rows, read once
            await source.prepare(turn)

        def tools() -> list[Tool]:  # asked before each step: a step may add a tool
            return [t for source in self._sources for t in source.tools_for(turn)]

        note = self._note(turn) if self._note is not None else ""
        now = self._note_message(note) if note else ()
        asked = prepared.asked(with_quote(turn.inbound.text, turn.inbound.quoted))
        newest = ChatMessage(role="user", content=asked, images=prepared.images)
        messages = (*session.history, *now, newest)
        stream = mask.stream() if on_delta is not None else None
        sink = on_delta
        if stream is not None and on_delta is not None:
            deliver = on_delta

            async def sink(piece: str) -> None:
                safe = stream.feed(piece)
                if safe:
                    await deliver(safe)

        result = await run_agent(
            backend,
            system,
            messages,
            tools,
            turn,
            self._settings.max_steps,
            sink,
            redact=mask.mask,
            max_reply_chars=self._settings.max_reply_chars,
            tenant=turn.dirs.tenant,
            stable_chars=stable,
            progress=on_progress,
            memo=self._masked,
            screen=mask.screened,
        )
        if stream is not None and on_delta is not None:
            rest = stream.flush()
            if rest:
                await on_delta(rest)
        return result

    def _note_message(self, note: str) -> tuple[ChatMessage]:
        """The note as a user message, the same object for the same note (a minute's Now
        note without topics is the same for every turn in it): the agent loop keeps a
        message masked per (message, masker) object, so it is masked once, not per turn."""
        hit = self._notes.get(note)
        if hit is None:
            if len(self._notes) >= 256:
                self._notes.clear()
            hit = self._notes[note] = (ChatMessage(role="user", content=note),)
        return hit

    def _system(self, turn: TurnContext, mask: OutputMask) -> tuple[str, int]:
        """The system prompt and its stable prefix length, measured after the vault mask
        (which run_agent applies), so the offset points into the text the model gets."""
        if self._stable is None:
            return self._prompt.system_prompt(turn), 0
        system, stable = self._stable.system_prompt_parts(turn)
        return system, self._masked.stable(system, stable, mask.mask)


def _sent(inbound: Inbound, mask: OutputMask) -> Masked:
    """What the person sent, for the history they read ('' when it is the stored text),
    masked again as a whole: the session store takes only masked text. A scheduled
    job's run is marked so (its msg_id, `bridge.core.shown.with_run`) in the same
    `meta`, which the conversation archive keeps (it keeps no msg_id)."""
    meta = sent_meta(inbound.text, inbound.quoted, inbound.attachments, mask.mask)
    if inbound.scheduled:
        meta = with_run(meta, inbound.msg_id)
    return mask.mask(meta)


def _showing(on_delta: DeltaSink | None, shown: list[str]) -> DeltaSink:
    """`on_delta` that also keeps each piece in `shown`."""

    async def sink(piece: str) -> None:
        shown.append(piece)
        if on_delta is not None:
            await on_delta(piece)

    return sink


async def _kept(what: str, step: Awaitable[T]) -> T | None:
    """Run a bookkeeping step; a full disk there is logged (None), and the answer goes on."""
    try:
        return await step
    except (OSError, sqlite3.Error, StorageError) as exc:  # the storage layer's, from SQLite's
        _not_written(what, exc)
        return None


def _not_written(what: str, exc: OSError | sqlite3.Error | StorageError) -> None:
    """A bookkeeping step's error: a full disk is logged (the answer goes on), any other
    error raised again."""
    if not disk_full(exc):
        raise exc
    log.error("%s not written, the disk is full (%s); the answer is still sent", what, exc)


def _failure(said: str, turn: TurnContext, mask: OutputMask) -> Final:
    """The error reply of a failed turn, ending with the notices of what its tools changed
    before it failed (a memory saved) and offering their actions (its undo)."""
    if turn.notices:
        said += "\n\n" + mask.mask("\n".join(turn.notices))
    return Final(said, "error", actions=tuple(turn.actions))


async def _with_notices(
    text: str, notices: list[str], mask: OutputMask, on_delta: DeltaSink | None
) -> str:
    """End the reply with the tools' notices for the person (streamed too)."""
    block = mask.mask("\n".join(notices))
    if on_delta is not None:
        await on_delta("\n\n" + block)
    return text + "\n\n" + block


def _received(inbound: Inbound) -> dict[str, object]:
    return {
        "channel": inbound.channel,
        "chat": inbound.chat,
        "msg_id": inbound.msg_id,
        "chars": len(inbound.text),
        "quoted_chars": quote_chars(inbound.quoted),
        **attachment_meta(inbound),
    }


def _answered(inbound: Inbound, text: str, ms: int, result: AgentResult) -> dict[str, object]:
    return {
        "channel": inbound.channel,
        "chat": inbound.chat,
        "msg_id": inbound.msg_id,
        "chars": len(text),
        "ms": ms,
        "steps": result.steps,
        "tool_calls": len(result.tool_runs),
    }
