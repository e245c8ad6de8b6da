"""The core: one inbound message in, one reply out.

It resolves the tenant (unknown identities are refused and nothing else
happens), checks size, serialises messages of one chat (different chats run
concurrently), and routes `/commands` to the command table and everything
else to a model turn. Any failure inside becomes a short reply; the core
never lets one message take down another. It imports no channel or backend.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from bridge.core.commands import CommandContext, CommandTable, UsageError, parse_command
from bridge.core.sessions import SessionKey
from bridge.core.strangers import StrangerAudit, StrangerLimits
from bridge.core.tenants import TenantResolver
from bridge.core.turn import TurnRunner
from bridge.types.audit_sink import AuditSink
from bridge.types.messages import DeltaSink, Final, Inbound
from bridge.types.tenant_dirs import TenantDirs

log = logging.getLogger(__name__)

REFUSAL = (
    "Sorry, I don't know you. This assistant is private: ask its operator for access "
    "(they can run `roost pair <tenant>` and give you a code to send as /pair CODE)."
)


MAX_REMEMBERED_TENANTS = 1024


@dataclass(frozen=True, slots=True)
class CoreLimits:
    max_message_chars: int = 16_000


class ChatLocks:
    """One FIFO lock per chat, dropped again when nobody holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[SessionKey, tuple[asyncio.Lock, int]] = {}

    def acquire(self, key: SessionKey) -> _Held:
        return _Held(self, key)

    def __len__(self) -> int:
        return len(self._locks)


class _Held:
    def __init__(self, owner: ChatLocks, key: SessionKey) -> None:
        self._owner, self._key = owner, key

    async def __aenter__(self) -> None:
        locks = self._owner._locks
        lock, users = locks.get(self._key, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        locks[self._key] = (lock, users + 1)
        try:
            await lock.acquire()
        except BaseException:
            self._release_slot()
            raise

    async def __aexit__(self, *exc: object) -> None:
        self._owner._locks[self._key][0].release()
        self._release_slot()

    def _release_slot(self) -> None:
        locks = self._owner._locks
        lock, users = locks[self._key]
        if users <= 1:
            del locks[self._key]
        else:
            locks[self._key] = (lock, users - 1)


class Core:
    def __init__(
        self,
        *,
        home_tenant_dirs: Callable[[str], TenantDirs],
        resolver: TenantResolver,
        commands: CommandTable,
        turns: TurnRunner,
        audit: AuditSink,
        clock: Callable[[], float] = time.time,
        limits: CoreLimits | None = None,
        strangers: StrangerLimits | None = None,
    ) -> None:
        self._dirs = home_tenant_dirs
        self._tenant_dirs: dict[str, TenantDirs] = {}
        self._resolver = resolver
        self.commands = commands
        self._turns = turns
        self._audit = audit
        self._clock = clock
        self._limits = limits or CoreLimits()
        self.locks = ChatLocks()
        self._inflight: set[asyncio.Task[object]] = set()
        self._strangers = StrangerAudit(audit, clock, strangers)

    async def drain(self, grace_s: float) -> int:
        """Let in-flight messages finish for up to `grace_s`, then cancel the rest.

        Returns how many were cancelled. Counted-only stranger events are
        written as their aggregate record.
        """
        await self._strangers.flush()
        pending = {t for t in self._inflight if not t.done()}
        if pending:
            _, pending = await asyncio.wait(pending, timeout=grace_s)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=5)
        return len(pending)

    async def handle(self, inbound: Inbound, on_delta: DeltaSink | None = None) -> Final:
        """Answer one message; `on_delta` receives answer pieces as they grow."""
        tenant = self._resolver.resolve(inbound)
        if tenant is None:
            await self._strangers.record("access.refused", inbound.channel, inbound.identity, {})
            return Final(REFUSAL, "refusal")
        text = inbound.text.strip()
        if not text:
            return Final("Your message is empty. Type something, or /help for commands.", "error")
        limit = self._limits.max_message_chars
        if len(inbound.text) > limit:
            return Final(
                f"Your message is {len(inbound.text):,} characters; the limit is {limit:,}. "
                "Please shorten it or send it in parts.",
                "error",
            )
        key = SessionKey(tenant, inbound.channel, inbound.chat)
        task = asyncio.current_task()
        if task is not None:
            self._inflight.add(task)
        try:
            return await self._locked(inbound, tenant, key, on_delta)
        finally:
            if task is not None:
                self._inflight.discard(task)

    async def _locked(
        self, inbound: Inbound, tenant: str, key: SessionKey, on_delta: DeltaSink | None
    ) -> Final:
        async with self.locks.acquire(key):
            try:
                return await self._route(inbound, tenant, key, on_delta)
            except asyncio.CancelledError:
                raise
            except Exception:
                ref = secrets.token_hex(4)
                log.exception("message failed (ref %s, channel %s)", ref, inbound.channel)
                return Final(
                    f"Something went wrong on my side (ref {ref}). Nothing was lost; "
                    "please try again.",
                    "error",
                )

    async def _route(
        self, inbound: Inbound, tenant: str, key: SessionKey, on_delta: DeltaSink | None
    ) -> Final:
        dirs = self._dirs_of(tenant)
        parsed = parse_command(inbound.text.strip())
        if parsed is None:
            return await self._turns.run(inbound, dirs, key, on_delta)
        command = self.commands.get(parsed.name)
        if command is None:
            hint = self.commands.suggest(parsed.name)
            maybe = f" Did you mean /{hint}?" if hint else ""
            reply = f"Unknown command /{parsed.name}.{maybe} Send /help for the list."
            await self._emit_command(tenant, inbound, parsed.name, "unknown")
            return Final(reply, "command")
        ctx = CommandContext(inbound, tenant, dirs, key, self._clock())
        try:
            reply = await command.handler(ctx, parsed.args)
            outcome = "ok"
        except UsageError as exc:
            reason = f"{exc}\n" if str(exc) else ""
            reply, outcome = f"{reason}Usage: {command.usage}", "usage"
        await self._emit_command(tenant, inbound, command.name, outcome)
        return Final(reply, "command")

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
