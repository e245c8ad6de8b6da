"""The composition root: builds every object of a running roost.

`build()` wires configuration, the database, the audit chain, tenants, the
command table, the loadout, skills, the forge, the model backend and the
core, and returns them as one `Roost` that owns their lifetimes. `roost
send` and `roost chat` use `build()` too, so a message from a script takes
exactly the same path as one from a chat; `bridge.app.serve.serve()` adds the
channels and signals.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bridge.app.loadout import Loadout, build_loadout
from bridge.audit import AuditChain, HmacKeyError, load_hmac_key
from bridge.channels.telegram_start import start_command
from bridge.core.atomic import remove_orphan_temps
from bridge.core.builtin_commands import CoreCommands
from bridge.core.commands import CommandTable
from bridge.core.config import ConfigError, Settings
from bridge.core.db import connect
from bridge.core.filecache import FileCache
from bridge.core.pairing import PairingStore
from bridge.core.router import Core, CoreLimits
from bridge.core.sessions import SessionStore
from bridge.core.tenants import TenantResolver, configured_tenants, loopback_rule, telegram_rule
from bridge.core.turn import TurnRunner, TurnSettings
from bridge.personal_tools.catalog import ToolCatalog
from bridge.personal_tools.commands import ToolCommands
from bridge.personal_tools.source import ForgeTools
from bridge.personal_tools.view import SavedToolsView
from bridge.skills.commands import SkillCommands
from bridge.skills.grades import SkillGrades, TurnLog
from bridge.skills.observer import SkillsObserver
from bridge.skills.view import GradedSkills
from bridge.style.store import StyleStore
from bridge.style.view import LearnedStyle
from bridge.types.audit_sink import AuditSink
from bridge.types.backend import Backend
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import ToolSource
from forge.library import SessionTools
from forge.runner import SandboxRunner

log = logging.getLogger("roost")


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
    pairing: PairingStore | None = None

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
                self.loadout.memory.store.rebuild_index(dirs)
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


def tighten(path: Path) -> None:
    """Make an existing directory of roost's 0700; say so when it was looser."""
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        path.chmod(0o700)
        log.warning(
            "%s was readable by others (mode %04o); changed to 0700 (it holds private data)",
            path,
            mode,
        )


def prepare_home(home: Path) -> None:
    """Create `$ROOST_HOME` (0700) or tighten it to 0700; an unusable home is a config error."""
    try:
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        tighten(home)
        (home / "tenants").mkdir(mode=0o700, exist_ok=True)
        tighten(home / "tenants")
        if not os.access(home, os.W_OK | os.X_OK):
            raise PermissionError(13, "not writable")
    except OSError as exc:
        raise ConfigError(
            f"invalid configuration: home: cannot use {home} ({exc.strerror}); "
            "set ROOST_HOME to a writable directory"
        ) from None


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


async def record_event(
    settings: Settings, event: str, tenant: str | None, details: dict[str, object]
) -> None:
    """Append one event from an operator command (no daemon needed; the chain is locked)."""
    chain = await open_chain(settings, time.time)
    try:
        await chain.emit(event, tenant, details)
    finally:
        await chain.aclose()


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
        [
            loopback_rule(settings.local_tenant),
            telegram_rule(ids),
            pairing.rule(configured_tenants(settings.tenants, settings.local_tenant).__contains__),
        ]
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
        settings,
        db,
        audit,
        skills=GradedSkills(grades, files),
        style=LearnedStyle(StyleStore(db)),
        tools=SavedToolsView(catalog),
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
        settings=TurnSettings(settings.llm.max_steps, limits.max_reply_chars),
        observers=observers,
        masks=loadout.vault.masker,
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
        pairing=pairing,
    )
