"""The composition root: builds every object of a running roost.

`build()` wires configuration, the database, tenants, the command table,
the model backend and the core, and returns them as one `Roost` that owns
their lifetimes. `serve()` adds the channels, owns signals and shuts down
cleanly on SIGTERM. `roost send` and `roost chat` use `build()` too, so a
message from a script takes exactly the same path as one from a chat.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import signal
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bridge.audit_sink import AuditSink, NullAudit
from bridge.backend import Backend
from bridge.base_prompt import base_prompt
from bridge.builtin_commands import CoreCommands
from bridge.commands import CommandTable
from bridge.config import Settings
from bridge.core import Core, CoreLimits
from bridge.db import connect
from bridge.sessions import SessionStore
from bridge.tenants import TenantDirs, TenantResolver, loopback_rule, telegram_rule
from bridge.tools import ToolSource, TurnContext
from bridge.turn import TurnRunner, TurnSettings

log = logging.getLogger("roost")


class BasePromptSource:
    """The spine's prompt: block 1 only (the loadout adds the other eight)."""

    def system_prompt(self, turn: TurnContext) -> str:
        return base_prompt(turn.inbound.channel)


@dataclass
class Roost:
    settings: Settings
    db: sqlite3.Connection
    backend: Backend
    backend_reason: str
    core: Core
    audit: AuditSink
    sessions: SessionStore
    closers: list[Callable[[], object]] = field(default_factory=list)

    def tenant_dirs(self, tenant: str) -> TenantDirs:
        return TenantDirs.of(self.settings.home, tenant).ensure()

    def command_list(self) -> list[dict[str, str]]:
        rows = self.core.commands
        return [{"name": c.name, "usage": c.usage, "summary": c.summary} for c in rows]

    async def aclose(self) -> None:
        for close in reversed(self.closers):
            result = close()
            if asyncio.iscoroutine(result):
                await result
        await self.backend.aclose()
        self.db.close()


def prepare_home(home: Path) -> None:
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "tenants").mkdir(mode=0o700, exist_ok=True)


def make_backend(settings: Settings) -> tuple[Backend, str]:
    from bridge.llm.select import select_backend

    llm = settings.llm
    key = llm.api_key.get_secret_value() if llm.api_key else None
    return select_backend(
        llm.provider,
        llm.base_url,
        key,
        llm.model,
        timeout_s=llm.timeout_s,
        max_retries=llm.max_retries,
    )


async def build(
    settings: Settings,
    *,
    backend: Backend | None = None,
    audit: AuditSink | None = None,
    clock: Callable[[], float] = time.time,
    tool_sources: Sequence[ToolSource] = (),
) -> Roost:
    """Wire one roost; the caller owns `aclose()`."""
    prepare_home(settings.home)
    db = connect(settings.home / "roost.db")
    reason = "backend passed in"
    if backend is None:
        backend, reason = make_backend(settings)
    audit = audit or NullAudit()
    limits = settings.limits
    sessions = SessionStore(db, limits.session_chars, limits.session_idle_days * 86400)
    ids = {uid: tid for tid, rule in settings.tenants.items() for uid in rule.telegram_ids}
    resolver = TenantResolver([loopback_rule(settings.local_tenant), telegram_rule(ids)])
    table = CommandTable(())
    for row in CoreCommands(lambda: table, sessions, backend.describe).commands():
        table.add(row)
    turns = TurnRunner(
        backend=backend,
        sessions=sessions,
        prompt=BasePromptSource(),
        tool_sources=tool_sources,
        audit=audit,
        clock=clock,
        settings=TurnSettings(max_steps=settings.llm.max_steps),
    )
    core = Core(
        home_tenant_dirs=lambda t: TenantDirs.of(settings.home, t),
        resolver=resolver,
        commands=table,
        turns=turns,
        audit=audit,
        clock=clock,
        limits=CoreLimits(limits.max_message_chars),
    )
    return Roost(settings, db, backend, reason, core, audit, sessions)


def web_token(settings: Settings) -> tuple[str, bool]:
    """The web bearer token: configured, stored, or generated now (mode 0600)."""
    if settings.web.token is not None:
        return settings.web.token.get_secret_value(), False
    path = settings.home / "web-token"
    if path.is_file():
        return path.read_text().strip(), False
    token = secrets.token_urlsafe(24)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    return token, True


async def serve(settings: Settings, *, ready: Callable[[int], None] | None = None) -> int:
    """Run the daemon until SIGTERM/SIGINT; exit status 0 on a clean stop."""
    from bridge.channels.web import WebChannel

    prepare_home(settings.home)
    roost = await build(settings)
    log.info("model backend: %s (%s)", roost.backend.describe(), roost.backend_reason)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    channels = []
    try:
        if settings.web.enabled:
            token, created = web_token(settings)
            web = WebChannel(
                roost.core.handle, roost.command_list, token, settings.web.host, settings.web.port
            )
            await web.start()
            channels.append(web)
            url = f"http://{settings.web.host}:{web.port}/"
            if created:
                print(f"roost: web chat at {url}#token={token}", flush=True)
                print(f"roost: the access token is stored in {settings.home / 'web-token'}")
            else:
                print(f"roost: web chat at {url} (token in {settings.home / 'web-token'})")
        print(f"roost: model {roost.backend.describe()}; home {settings.home}", flush=True)
        if ready is not None:
            ready(channels[0].port if channels else 0)
        await stop.wait()
        grace = settings.limits.shutdown_grace_s
        log.info("stopping: letting in-flight messages finish (up to %gs)", grace)
        cancelled = await roost.core.drain(grace)
        if cancelled:
            log.warning("stopping: cancelled %d unfinished messages", cancelled)
    finally:
        for channel in reversed(channels):
            await channel.stop()
        await roost.aclose()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    print("roost: stopped", file=sys.stderr, flush=True)
    return 0
