"""The core: one inbound message in, one reply out.

`handle` and `answer` are the one way in. Before anything else reads a
message, every text it carries is made valid Unicode (`valid_inbound`: a lone
surrogate from a JSON escape becomes U+FFFD, so storing the turn cannot fail
after the model was paid). Access comes next (`bridge.core.access`: unknown
identities are refused once and nothing else happens, `/pair` is redeemed,
commands for another bot are silently dropped); then size checks; then
messages of one chat are serialised by one FIFO lock (different chats run
concurrently) and `/commands` go to the command table, everything else to a
model turn. Any failure inside becomes a short reply; the core never lets one
message take down another. It imports no channel or backend: a
request/response channel calls `handle` and sends the returned `Final`; a push
channel calls `answer` with a `Reply`, which the core drives (working, delta,
send) while the chat's lock is held, so one chat's replies go out in order. A
model turn runs through `running` (`bridge.core.running`), so a channel can
stop it or attach to it while it runs. A message that has to wait for its
chat's earlier ones is acknowledged at once through a reply that can
(`Queued`: Telegram reacts to it), unless all it waits for is the delivery of
the answer ahead (its turn is over, its final is being sent: the person may
already see it and answer back before its send returns; that wait is short and
a 👀 set then would be taken back at once). A command marked `immediate`
(`/stop`) runs at once beside the chat's running answer instead of after it.
Every reply to an admitted message leaves through the tenant's masker
(`masks`), commands' replies included, and so does the question a running turn
shows to an attaching page.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import sqlite3
import time
from collections.abc import Callable, Coroutine, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace

from bridge.core.access import Access
from bridge.core.commands import (
    NOT_SCHEDULED,
    SCHEDULED_MAY_RUN,
    CommandContext,
    CommandTable,
    Refused,
    UsageError,
    parse_command,
)
from bridge.core.diskfull import DISK_FULL, disk_full
from bridge.core.locks import KeyedLocks
from bridge.core.masks import OutputMask
from bridge.core.outfiles import confine
from bridge.core.pairing import PairingStore
from bridge.core.running import RunningTurns
from bridge.core.sessions import SessionKey
from bridge.core.strangers import StrangerLimits
from bridge.core.tenants import TenantResolver
from bridge.core.turn import TurnRunner, TurnSettings
from bridge.core.unreachable import DATABASE_DOWN, database_down
from bridge.storage.errors import DatabaseUnavailable, StorageError
from bridge.types.audit_sink import AuditSink
from bridge.types.masked import Masked
from bridge.types.messages import DeltaSink, Final, Inbound, Queued, Reply, valid_inbound
from bridge.types.progress import ProgressSink
from bridge.types.tenant_dirs import TenantDirs

log = logging.getLogger(__name__)
# the access check could not reach the database (PostgreSQL went away; the backend
# reconnects in the background): the message was not taken in, and the person is told
DATABASE_AWAY = (
    "Not read: roost cannot reach its database right now, so this message was not taken in. "
    "Send it again in a minute."
)

MAX_REMEMBERED_TENANTS = 1024
TEXT_ONLY = (
    "I can read text, photos, documents (PDF, text, Markdown, CSV, JSON) and voice notes, "
    "but not this kind of message - please type your question or send one of those."
)


@dataclass(frozen=True, slots=True)
class CoreLimits:
    max_message_chars: int = 16_000


class Returned:
    """The `Reply` of `Core.handle`: deltas to `on_delta`, the Final is returned."""

    def __init__(self, on_delta: DeltaSink | None) -> None:
        self.on_delta = on_delta

    def working(self) -> AbstractAsyncContextManager[object]:
        return contextlib.nullcontext()

    async def delta(self, piece: str) -> None:
        if self.on_delta is not None:
            await self.on_delta(piece)

    async def send(self, final: Final) -> None:
        return None


def unreadable(inbound: Inbound, limit: int) -> Final | None:
    """The reply to a message the core will not read (not text, empty, too long)."""
    if not inbound.has_text and not inbound.attachments:
        return Final(TEXT_ONLY, "error")
    if not inbound.text.strip() and not inbound.attachments:  # a photo needs no caption
        return Final("Your message is empty. Type something, or /help for commands.", "error")
    if len(inbound.text) > limit:
        return Final(
            f"Your message is {len(inbound.text):,} characters; the limit is {limit:,}. "
            "Please shorten it or send it in parts.",
            "error",
        )
    return None


class Core:
    def __init__(
        self,
        *,
        home_tenant_dirs: Callable[[str], TenantDirs],
        resolver: TenantResolver,
        pairing: PairingStore,
        commands: CommandTable,
        turns: TurnRunner,
        audit: AuditSink,
        masks: Callable[[TenantDirs], OutputMask],
        clock: Callable[[], float] = time.time,
        limits: CoreLimits | None = None,
        strangers: StrangerLimits | None = None,
        titles: Mapping[str, str] | None = None,  # channel -> how people call it (refusals)
        running: RunningTurns[SessionKey] | None = None,
    ) -> None:
        self._dirs = home_tenant_dirs
        self._tenant_dirs: dict[str, TenantDirs] = {}
        self.access = Access(resolver, pairing, audit, strangers, titles)
        self.commands = commands
        self._turns = turns
        self._audit = audit
        self._masks = masks
        self._clock = clock
        self._limits = limits or CoreLimits()
        self.locks: KeyedLocks[SessionKey] = KeyedLocks()
        self._delivering: set[SessionKey] = set()  # chats whose holder sends its final now
        # a chat's messages pass the access check one at a time, in arrival order: the
        # check awaits the database, and the next message must not reach the chat's lock
        # first (released with no await before `_admitted` queues at that lock)
        self._arrivals: KeyedLocks[tuple[str, str]] = KeyedLocks()
        # stop / attach a turn (shared with /stop, `bridge.core.builtin_commands`)
        self.running: RunningTurns[SessionKey] = running or RunningTurns()
        self._inflight: set[asyncio.Task[object]] = set()
        # set by `drain`: a `handle` message that arrives from then on is not taken
        # (cancelled as the drain cancels what still runs: the web answers 503)
        self._stopping = False
        self.turns_served = 0  # model turns answered since start (systemd STATUS=)

    @property
    def limits(self) -> CoreLimits:
        """The limits in force (the last reload's)."""
        return self._limits

    def set_limits(self, limits: CoreLimits, turns: TurnSettings) -> None:
        """Apply reloaded limits from the next message on (a running turn keeps its own)."""
        self._limits = limits
        self._turns.set_settings(turns)

    async def drain(self, grace_s: float) -> int:
        """Let in-flight messages finish for up to `grace_s`, then cancel the rest.

        Returns how many were cancelled. Counted-only stranger events are
        written as their aggregate record. A cancelled turn that only a person's
        resend can answer (`handle`'s) is kept for the page's history as a failed turn
        (`TurnRunner.closing`); a push channel's (`answer`) is answered again from its
        inbox after the restart. From the drain's start on, a new `handle` message (the
        web's, whose caller waits for the answer) is cancelled on arrival, before anything
        reads it: its request would be cut when the listener stops, and the 503 its
        channel answers says to send it again; an `immediate` command (`/stop`) still
        runs, so a person can stop the answer the drain waits for. A push channel's new
        message (`answer`) still runs: Matrix keeps no inbox to answer it from after the
        restart.
        """
        self._stopping = True
        await self.access.flush()
        pending = {t for t in self._inflight if not t.done()}
        if pending:
            _, pending = await asyncio.wait(pending, timeout=grace_s)
        if pending:
            self._turns.closing()
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=5)
        return len(pending)

    async def handle(
        self,
        inbound: Inbound,
        on_delta: DeltaSink | None = None,
        on_progress: ProgressSink | None = None,
    ) -> Final:
        """Answer one message; `on_delta` receives answer pieces as they grow,
        `on_progress` the turn's tool steps, retries and model."""
        return await self._serve(inbound, Returned(on_delta), on_delta, on_progress)

    async def answer(self, inbound: Inbound, reply: Reply) -> Final:
        """Answer one message through `reply`; returns what was sent (or `silent`)."""
        return await self._serve(inbound, reply, reply.delta)

    async def _serve(
        self,
        inbound: Inbound,
        reply: Reply,
        on_delta: DeltaSink | None,
        on_progress: ProgressSink | None = None,
    ) -> Final:
        inbound = valid_inbound(inbound)  # before anything reads it: no lone surrogate
        task = asyncio.current_task()
        if (  # roost stops (see `drain`); a `/stop` still stops what runs
            task is not None
            and self._stopping
            and isinstance(reply, Returned)
            and not self._immediate(inbound)
        ):
            task.cancel()
            await asyncio.sleep(0)  # the cancellation is raised here
        if task is not None:
            self._inflight.add(task)
        try:
            async with self._arrivals.hold((inbound.channel, inbound.chat)):
                try:
                    admitted = await self.access.admit(inbound)
                except DatabaseUnavailable as exc:  # the server went away: nothing was read
                    log.warning(
                        "database unreachable while admitting a message (%s): %s",
                        inbound.channel,
                        exc,
                    )
                    admitted = Final(DATABASE_AWAY, "error")
                except (OSError, sqlite3.Error, StorageError) as exc:  # pairing: a full disk
                    if not disk_full(exc):
                        raise
                    log.error("disk full while admitting a message (%s): %s", inbound.channel, exc)
                    admitted = Final(DISK_FULL, "error")
            if isinstance(admitted, str):
                return await self._admitted(inbound, admitted, reply, on_delta, on_progress)
            if admitted.kind != "silent":
                await reply.send(admitted)
            return admitted
        finally:
            if task is not None:
                self._inflight.discard(task)

    async def _admitted(
        self,
        inbound: Inbound,
        tenant: str,
        reply: Reply,
        on_delta: DeltaSink | None,
        on_progress: ProgressSink | None,
    ) -> Final:
        final = unreadable(inbound, self._limits.max_message_chars)
        if final is not None:
            await reply.send(final)
            return final
        key = SessionKey(tenant, inbound.channel, inbound.chat)
        if self._immediate(inbound):  # /stop: beside the running answer, not after it
            final = await self._guarded(inbound, tenant, key, on_delta, on_progress)
            final = masked(final, self._masks(self._dirs_of(tenant)))
            if final.kind != "silent":
                await reply.send(final)
            return final
        ahead = self.locks.users(key)
        delivered = ahead == 1 and key in self._delivering  # next the moment it is sent
        if ahead and not delivered and isinstance(reply, Queued):  # answered in turn
            acknowledge(reply, ahead)
        resent = not isinstance(reply, Returned)  # a push channel's inbox answers it again
        async with self.locks.hold(key):
            async with reply.working():
                final = await self._guarded(inbound, tenant, key, on_delta, on_progress, resent)
            final = masked(final, self._masks(self._dirs_of(tenant)))
            self._delivering.add(key)
            try:
                await reply.send(final)
            finally:
                self._delivering.discard(key)
        return final

    async def _guarded(
        self,
        inbound: Inbound,
        tenant: str,
        key: SessionKey,
        on_delta: DeltaSink | None,
        on_progress: ProgressSink | None = None,
        resent: bool = False,
    ) -> Final:
        try:
            final = await self._route(inbound, tenant, key, on_delta, on_progress, resent)
            return confine(final, self._dirs_of(tenant))  # a reply's files: the tenant's only
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if disk_full(exc):  # a state change met a full disk: say so, not "nothing was lost"
                log.error("disk full (channel %s): %s", inbound.channel, exc)
                return Final(DISK_FULL, "error")
            if database_down(exc):  # PostgreSQL went away: one line, the backend reconnects
                log.error("database unreachable (channel %s): message not taken", inbound.channel)
                return Final(DATABASE_DOWN, "error")
            ref = secrets.token_hex(4)
            log.exception("message failed (ref %s, channel %s)", ref, inbound.channel)
            return Final(
                f"Something went wrong on my side (ref {ref}). Nothing was lost; please try again.",
                "error",
            )

    async def _route(
        self,
        inbound: Inbound,
        tenant: str,
        key: SessionKey,
        on_delta: DeltaSink | None,
        on_progress: ProgressSink | None = None,
        resent: bool = False,
    ) -> Final:
        dirs = self._dirs_of(tenant)
        parsed = parse_command(inbound.text.strip())
        if parsed is None:
            self.turns_served += 1

            def turn(sink: DeltaSink, progress: ProgressSink) -> Coroutine[object, object, Final]:
                return self._turns.run(inbound, dirs, key, sink, progress, resent=resent)

            asked, now = self._masks(dirs).mask(inbound.text), self._clock()
            return await self.running.run(key, turn, on_delta, on_progress, asked, now)
        command = self.commands.get(parsed.name)
        if command is None:
            hint = self.commands.suggest(parsed.name)
            maybe = f" Did you mean /{hint}?" if hint else ""
            unknown = f"Unknown command /{parsed.name}.{maybe} Send /help for the list."
            await self._emit_command(tenant, inbound, parsed.name, "unknown")
            return Final(unknown, "command", failed=True)
        if inbound.scheduled and command.name not in SCHEDULED_MAY_RUN:
            await self._emit_command(tenant, inbound, command.name, "refused")
            return Final(NOT_SCHEDULED.format(name=command.name), "command", failed=True)
        ctx = CommandContext(inbound, tenant, dirs, key, self._clock())
        reply: str | Final
        try:
            reply = await command.handler(ctx, parsed.args)
            outcome = "ok"
        except UsageError as exc:
            reason = f"{exc}\n" if str(exc) else ""
            reply, outcome = f"{reason}Usage: {command.usage}", "usage"
        except Refused as exc:
            reply, outcome = str(exc), "refused"
        await self._emit_command(tenant, inbound, command.name, outcome)
        if isinstance(reply, Final):
            return reply
        return Final(reply, "command", failed=outcome != "ok")

    def _immediate(self, inbound: Inbound) -> bool:
        parsed = parse_command(inbound.text.strip())
        command = self.commands.get(parsed.name) if parsed is not None else None
        return command is not None and command.immediate

    def _dirs_of(self, tenant: str) -> TenantDirs:
        """The tenant's (immutable) directory layout, made once per tenant.

        Only the paths are remembered; whether they exist is checked by
        `ensure()` on every use, as before.
        """
        dirs = self._tenant_dirs.get(tenant)
        if dirs is None:
            dirs = self._dirs(tenant)
            if len(self._tenant_dirs) >= MAX_REMEMBERED_TENANTS:
                self._tenant_dirs.clear()
            self._tenant_dirs[tenant] = dirs
        return dirs

    async def _emit_command(self, tenant: str, inbound: Inbound, name: str, outcome: str) -> None:
        details = {"name": name, "outcome": outcome, "channel": inbound.channel}
        await self._audit.emit("command.run", tenant, details)


def acknowledge(reply: Queued, ahead: int) -> None:
    """Tell a channel its message waits behind `ahead` others; a failure is only logged."""
    try:
        reply.queued(ahead)
    except Exception:
        log.exception("acknowledging a queued message failed")


def masked(final: Final, mask: OutputMask) -> Final:
    """The reply as it leaves: its text and its buttons through the tenant's masker
    (`final` itself when it has no buttons and its text is masked already, as the
    masker leaves it: a turn's answer, masked by the turn)."""
    text = mask.mask(final.text)
    if not final.actions and type(final.text) is Masked and text == final.text:
        return final
    actions = tuple(
        replace(a, label=mask.mask(a.label), command=mask.mask(a.command)) for a in final.actions
    )
    return replace(final, text=text, actions=actions)
