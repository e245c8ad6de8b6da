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
from typing import Any

from bridge.audit import AuditChain, HmacKeyError, load_hmac_key
from bridge.audit_sink import AuditSink
from bridge.backend import Backend
from bridge.base_prompt import base_prompt
from bridge.builtin_commands import CoreCommands
from bridge.channels.telegram_start import start_command
from bridge.commands import CommandTable
from bridge.config import ConfigError, Settings
from bridge.core import Core, CoreLimits
from bridge.db import connect
from bridge.loadout.atomic import remove_orphan_temps
from bridge.loadout.filecache import FileCache
from bridge.loadout.wiring import Loadout, build_loadout
from bridge.pairing import PairingStore
from bridge.personal_tools.catalog import ToolCatalog
from bridge.personal_tools.commands import ToolCommands
from bridge.personal_tools.source import ForgeTools
from bridge.personal_tools.view import SavedToolsView
from bridge.sessions import SessionStore
from bridge.skills.commands import SkillCommands
from bridge.skills.grades import SkillGrades, TurnLog
from bridge.skills.observer import SkillsObserver
from bridge.skills.view import GradedSkills
from bridge.tenants import TenantDirs, TenantResolver, loopback_rule, telegram_rule
from bridge.tools import ToolSource, TurnContext
from bridge.turn import TurnRunner, TurnSettings
from forge.library import SessionTools
from forge.runner import SandboxRunner

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
    loadout: Loadout | None = None
    runner: SandboxRunner | None = None
    resolver: TenantResolver | None = None

    def maintain(self) -> int:
        """Start-up care of every tenant: drop temp files a crash left, rebuild MEMORY.md.

        Returns how many orphan temp files were removed.
        """
        removed = 0
        tenants = self.settings.home / "tenants"
        for tdir in sorted(tenants.iterdir()) if tenants.is_dir() else ():
            try:
                dirs = TenantDirs.of(self.settings.home, tdir.name)
            except ValueError:
                continue  # not a tenant directory roost made
            for sub in (dirs.root, dirs.memory, dirs.tools, dirs.vault, dirs.skills):
                removed += remove_orphan_temps(sub)
            if self.loadout is not None and dirs.memory.is_dir():
                self.loadout.memory.store.rebuild_index(dirs.root)
        return removed

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


async def open_chain(settings: Settings, clock: Callable[[], float]) -> AuditChain:
    """The audit chain of this home, with the HMAC key when one is configured."""
    audit_dir = settings.home / "audit"
    try:
        key = load_hmac_key(settings.audit_hmac_key_file, audit_dir)
    except HmacKeyError as exc:
        raise ConfigError(f"invalid configuration: audit_hmac_key_file: {exc}") from exc
    chain = AuditChain(audit_dir / "chain.jsonl", hmac_key=key, clock=clock)
    await chain.open()
    return chain


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
    closers: list[Callable[[], object]] = []
    if audit is None:
        chain = await open_chain(settings, clock)
        closers.append(chain.aclose)
        audit = chain
    limits = settings.limits
    sessions = SessionStore(db, limits.session_chars, limits.session_idle_days * 86400)
    ids = {uid: tid for tid, rule in settings.tenants.items() for uid in rule.telegram_ids}
    pairing = PairingStore(db, clock)
    resolver = TenantResolver(
        [loopback_rule(settings.local_tenant), telegram_rule(ids), pairing.rule()]
    )
    table = CommandTable(())
    for row in CoreCommands(lambda: table, sessions, backend.describe).commands():
        table.add(row)
    table.add(start_command(lambda: table))
    files = FileCache()
    grades = SkillGrades(db)
    runner = SandboxRunner()
    closers.append(runner.aclose)
    catalog = ToolCatalog(files, lambda: int(clock() * 1000))
    loadout = build_loadout(
        settings, db, audit, skills=GradedSkills(grades, files), tools=SavedToolsView(catalog)
    )
    draft_tools = SessionTools()
    forge_tools = ForgeTools(runner, draft_tools, catalog, loadout.vault.reveal, audit)
    command_sets = (
        *loadout.command_sets,
        SkillCommands(grades, files),
        ToolCommands(draft_tools, catalog, audit),
    )
    for command_set in command_sets:
        for row in command_set.commands():
            table.add(row)
    observers = [SkillsObserver(grades, TurnLog(db), files, clock)]
    turns = TurnRunner(
        backend=backend,
        sessions=sessions,
        prompt=loadout.prompt,
        tool_sources=(loadout.tool_source, forge_tools, *tool_sources),
        audit=audit,
        clock=clock,
        settings=TurnSettings(max_steps=settings.llm.max_steps),
        observers=observers,
        masks=lambda dirs: loadout.vault.masker(dirs.root),
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
    return Roost(
        settings,
        db,
        backend,
        reason,
        core,
        audit,
        sessions,
        closers=closers,
        loadout=loadout,
        resolver=resolver,
        runner=runner,
    )


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


def telegram_channel(settings: Settings, roost: Roost) -> Any:
    """The Telegram channel when a token is configured; telegram is imported only then."""
    if settings.telegram.token is None:
        return None
    if settings.telegram.mode == "webhook" and not settings.web.enabled:
        raise ConfigError("telegram.mode 'webhook' needs the web server (web.enabled = true)")
    from bridge.channels.telegram import TelegramChannel

    assert roost.resolver is not None
    return TelegramChannel(
        settings.telegram,
        roost.core.handle,
        roost.resolver.resolve,
        PairingStore(roost.db),
        roost.command_list,
        roost.audit,
    )


async def serve(settings: Settings, *, ready: Callable[[int], None] | None = None) -> int:
    """Run the daemon until SIGTERM/SIGINT; exit status 0 on a clean stop."""
    from bridge.channels.web import WebChannel

    prepare_home(settings.home)
    roost = await build(settings)
    log.info("model backend: %s (%s)", roost.backend.describe(), roost.backend_reason)
    removed = roost.maintain()
    if removed:
        log.warning("removed %d temporary files left by an earlier crash", removed)
    if roost.runner is not None:
        await roost.runner.start()  # probes the sandbox; missing layers are logged loudly
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    channels = []
    telegram = telegram_channel(settings, roost)
    try:
        if settings.web.enabled:
            token, created = web_token(settings)
            web = WebChannel(
                roost.core.handle, roost.command_list, token, settings.web.host, settings.web.port
            )
            if telegram is not None and settings.telegram.mode == "webhook":
                telegram.mount(web.app)
            await web.start()
            channels.append(web)
            url = f"http://{settings.web.host}:{web.port}/"
            if created:
                print(f"roost: web chat at {url}#token={token}", flush=True)
                print(f"roost: the access token is stored in {settings.home / 'web-token'}")
            else:
                print(f"roost: web chat at {url} (token in {settings.home / 'web-token'})")
        if telegram is not None:
            channels.append(telegram)
            await telegram.start()
            print(f"roost: telegram bot @{telegram.app.bot.username} ({settings.telegram.mode})")
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
