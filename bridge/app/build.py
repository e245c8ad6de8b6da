"""The composition root: builds every object of a running roost.

`build()` wires configuration, the database, the audit chain, tenants, the
command table, the loadout, skills, the forge, the model backend and the
core, and returns them as one `Roost` that owns their lifetimes; every field
of a `Roost` is built here and passed in, none is optional. `roost send`,
`roost chat` and `roost pair` use `build()` too (through `with_roost`), so a
message from a script takes exactly the same path as one from a chat;
`bridge.app.serve.serve()` adds the channels and signals. The home, chain
and operator-event helpers are in `bridge.app.home`.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, cast

from bridge.app.channels_up import PLATFORMS
from bridge.app.database import open_database
from bridge.app.forget_marks import ForgetMarks
from bridge.app.home import open_chain, prepare_home
from bridge.app.instance import held
from bridge.app.lazy_broker import LazyBroker
from bridge.app.lazy_runner import LazyRunner
from bridge.app.metrics import MeteredAudit, Metrics, TimedBackend
from bridge.app.models import ModelRegistry, build_generation, make_backend, make_backend_of
from bridge.app.roost import Closer, Roost
from bridge.app.voice import Voice
from bridge.app.wiring import (
    build_access,
    build_capabilities,
    build_core,
    build_senses,
    model_commands,
)
from bridge.core.budgets import UsageMeter, budgets_of
from bridge.core.compactor import Compactor
from bridge.core.config import Settings, config_source
from bridge.core.conversations import ConversationArchive
from bridge.core.history_page import CurrentPage
from bridge.core.identities import identity_map
from bridge.core.pairing import warn_unconfigured, watching
from bridge.core.quota import TenantQuota
from bridge.core.sessions import SessionStore
from bridge.core.tenants import configured_tenants
from bridge.core.turn_failures import TurnFailures
from bridge.core.usage import UsageStore
from bridge.core.versions import TurnVersions
from bridge.grading.judge import OutcomeJudge
from bridge.grading.judge_store import JudgeUsage
from bridge.loadout.chat_settings import ChatSettings
from bridge.loadout.db_changes import TableChanges
from bridge.loadout.db_changes import watching as watching_rows
from bridge.schedule.commands import ChatNotes
from bridge.schedule.jobs import JobLimits
from bridge.schedule.service import ScheduleService
from bridge.senses.voice import VOICE_KINDS
from bridge.types.audit_sink import AuditSink
from bridge.types.backend import Backend
from bridge.types.platform import Platforms
from bridge.types.tools import ToolSource
from forge.net_call import NetBroker

if TYPE_CHECKING:
    from forge.runner import SandboxRunner

# Roost lives in bridge.app.roost, make_backend in bridge.app.models
__all__ = ["Roost", "build", "make_backend", "with_roost"]
log = logging.getLogger("roost")


def make_runner(settings: Settings, broker: NetBroker) -> SandboxRunner:
    """The sandbox runner of `settings` (`LazyRunner` makes it at its first use)."""
    from forge.protocol.limits import Limits
    from forge.runner import SandboxRunner

    return SandboxRunner(
        broker=broker,
        limits=Limits(write_bytes=settings.forge.write_bytes_per_call),
        helper_idle_s=settings.forge.helper_idle_s,
        fork_helpers=settings.forge.fork_helpers,
    )


def make_broker(settings: Settings) -> NetBroker:
    from forge.broker import Broker

    return Broker(
        private_hosts=tuple(settings.forge.private_hosts),
        rate_per_minute=settings.forge.net_requests_per_minute,
    )


async def build(
    settings: Settings,
    *,
    backend: Backend | None = None,
    audit: AuditSink | None = None,
    clock: Callable[[], float] = time.time,
    tool_sources: Sequence[ToolSource] = (),
    platforms: Platforms = PLATFORMS,
    terminal_tenant: str | None = None,
) -> Roost:
    """Wire one roost; the caller owns `aclose()`. A chain opened here is closed by it.

    A backend or audit sink passed in (tests, `roost prompt`) replaces the
    configured one; `tool_sources` are offered to the model besides the built-in ones;
    `platforms` is the registry of the channel table the roost serves (`serve()` passes
    its table's, with any extra rows); `terminal_tenant` is whom a plain `roost chat` runs
    as when it is not this roost's local tenant (`with_roost` for `--tenant T`).
    """
    identity_map(settings.tenants, platforms)  # ConfigError before anything is opened
    prepare_home(settings.home)
    # every store's way in: roost.db, or PostgreSQL with [database] url
    database = await open_database(settings.home / "roost.db", settings.database)
    # the prompt rows' versions, shared by the stores the prompt reads (and their mirrors)
    changes = TableChanges(database)
    chats = ChatSettings(database, changes)
    await chats.load()  # the mirror every chat-settings reader reads
    generation = build_generation(settings, make_backend_of, default=backend)
    metrics = Metrics()
    models = ModelRegistry(
        generation,
        chats,
        make_backend_of,
        fixed_default=backend,
        wrap=lambda inner: TimedBackend(inner, metrics),  # each model step, for /metrics
    )
    backend, reason = models.default_backend, generation.reasons[generation.default]
    for name, why in generation.reasons.items():
        if name != generation.default:
            log.info("model %s: %s", name, why)  # the default one is logged by serve
    meter = UsageMeter(UsageStore(database), budgets_of(settings), clock)
    closers: list[Closer] = []
    if audit is None:
        chain = await open_chain(settings, clock, platforms)
        closers.append(chain.aclose)
        audit = chain
    audit = MeteredAudit(audit, metrics)
    broker = LazyBroker(lambda: make_broker(settings))  # aiohttp: when a tool needs the net
    # forge.runner imported and the runner made at its first use (a tool's call, serve's
    # start of the sandbox): every attribute of the stand-in is the real runner's
    lazy = LazyRunner(lambda: make_runner(settings, broker))
    closers.append(lazy.aclose)
    runner = cast("SandboxRunner", lazy)
    limits = settings.limits
    shown = CurrentPage(database, TurnFailures(database), TurnVersions(database))
    archive = ConversationArchive(database, shown)
    sessions = SessionStore(
        database, limits.session_chars, limits.session_idle_days * 86400, archive
    )
    resolver, pairing = build_access(settings, database, clock, platforms)
    await pairing.load()  # the mirror the resolver's rule reads
    warn_unconfigured(
        pairing,
        configured_tenants(settings.tenants, settings.local_tenant),
        config_source(os.environ),
    )
    closers.append(watching(pairing))  # reloaded when another process pairs or revokes
    closers.append(chats.flush)  # the terminal inbox's marks, before the database closes
    closers.append(watching_rows(chats))  # read again when another process sets a choice
    closers.append(watching_rows(changes))  # ... or writes grades or style bullets
    schedule = ScheduleService(
        database,
        JobLimits(
            max_jobs=settings.schedule.max_jobs,
            min_interval_ms=settings.schedule.min_interval_minutes * 60_000,
        ),
        settings.schedule.timezone,
        serving=lambda: held(settings.home),
    )
    judge = OutcomeJudge(
        settings.grading,
        models.backend,
        JudgeUsage(database),
        audit,
        default_model=settings.llm.name,
        meter=meter,
        clock=clock,
    )
    quota = TenantQuota(settings.home, settings.quota.tenant_bytes)
    chat_notes: dict[str, ChatNotes] = {}  # filled by channel rows (serve), read by /jobs
    caps = build_capabilities(
        settings,
        database,
        chats,
        audit,
        runner,
        clock,
        tool_sources,
        schedule,
        models=models,
        judge=judge,
        quota=quota,
        platforms=platforms,
        chat_notes=chat_notes,
        terminal_tenant=terminal_tenant,
    )
    closers.extend(caps.closers)  # MCP sessions: closed before the sandbox and the chain
    # an unfinished `roost forget` bars its tenant: checked through the watched cache
    resolver.barred = ForgetMarks(settings.home, caps.loadout.files).barred
    voice = Voice(settings, resolver, chats, audit, platforms)
    closers.append(voice.aclose)
    sets = (
        caps.command_sets + model_commands(models, meter, chats, audit, clock) + (voice.commands,)
    )
    caps = dataclasses.replace(caps, command_sets=sets)
    # summaries of long conversations, in the background, counted in usage
    compactor = Compactor(sessions, audit, meter=meter)
    channel_lines: dict[str, Callable[[], str]] = {}
    senses = build_senses(
        settings, platforms, models, quota, caps.loadout.files.watch, caps.loadout.vault.masker
    )
    closers.append(senses.aclose)  # decoder processes: killed at shutdown
    for kind in VOICE_KINDS:  # voice notes and audio files: transcribed inside the turn
        senses.register(kind, voice.handle, explains_unfetched=True)
    core = build_core(
        settings,
        backend,
        sessions,
        resolver,
        pairing,
        audit,
        caps,
        clock,
        models,
        meter,
        compactor,
        senses,
        channels=lambda: [line() for line in channel_lines.values()],
        platforms=platforms,
    )
    closers.append(core.access.flush)  # closers run in reverse: before the chain closes
    closers.append(compactor.aclose)  # before the backend, the chain and the database
    closers.append(judge.aclose)  # its background requests: first of all
    return Roost(
        settings=settings,
        database=database,
        backend=backend,
        backend_reason=reason,
        models=models,
        meter=meter,
        audit=audit,
        sessions=sessions,
        loadout=caps.loadout,
        runner=runner,
        resolver=resolver,
        pairing=pairing,
        schedule=schedule,
        tool_sources=caps.tool_sources,
        core=core,
        metrics=metrics,
        compactor=compactor,
        judge=judge,
        voice=voice,
        senses=senses,
        quota=quota,
        closers=tuple(closers),
        platforms=platforms,
        channel_lines=channel_lines,
        chat_notes=chat_notes,
        exchanges=caps.exchanges,
    )


async def with_roost(
    settings: Settings, tenant: str | None, body: Callable[[Roost], Awaitable[int]]
) -> int:
    """Build a roost in this process (with `tenant` as the local one), run `body`, close.
    Whom a plain `roost chat` runs as stays the configured local tenant (its hints)."""
    terminal = settings.local_tenant
    if tenant is not None and tenant != settings.local_tenant:
        settings = settings.model_copy(update={"local_tenant": tenant})
    roost = await build(settings, terminal_tenant=terminal)
    try:
        return await body(roost)
    finally:
        await roost.aclose()
