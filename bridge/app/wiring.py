"""How the parts of a roost are connected: access, capabilities, chat commands, turns, the core.

Each function wires one concern from objects `bridge.app.build` has opened
(database, audit sink, sandbox runner, backend, clock) and returns it; none
opens or closes anything, so `build()` stays the one owner of lifetimes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bridge.app.export_chat import ExportCommands
from bridge.app.forget_marks import forgetting
from bridge.app.loadout import Loadout, build_loadout, persona_dirs
from bridge.app.memory_notes import MemoryNotes
from bridge.app.models import ModelRegistry
from bridge.channels.telegram.start import start_command
from bridge.core.budgets import UsageMeter
from bridge.core.builtin_commands import CoreCommands
from bridge.core.commands import CommandContext, CommandSet, CommandTable
from bridge.core.compactor import Compactor
from bridge.core.config import Settings
from bridge.core.dirs_memo import EnsuredDirs
from bridge.core.dirwatch import DirWatch
from bridge.core.filecache import FileCache
from bridge.core.identities import identity_map
from bridge.core.masks import SplitMask
from bridge.core.pairing import PairingStore
from bridge.core.quota import QuotaObserver, TenantQuota
from bridge.core.router import Core, CoreLimits
from bridge.core.running import RunningTurns
from bridge.core.sessions import SessionKey, SessionStore
from bridge.core.tenants import (
    Rule,
    TenantResolver,
    configured_tenants,
    identity_rule,
    loopback_rule,
    web_token_rule,
)
from bridge.core.turn import ExchangeLog, TurnObserver, TurnRunner, TurnSettings
from bridge.corrections.commands import CorrectionCommands
from bridge.corrections.keep import Keeper
from bridge.corrections.observer import CorrectionObserver
from bridge.corrections.offers import Offers
from bridge.grading.judge import OutcomeJudge
from bridge.llm.embeddings import embeddings_client
from bridge.loadout.chat_settings import ChatSettings
from bridge.loadout.model_commands import ModelCommands, UsageCommands
from bridge.mcp.source import McpTools
from bridge.personal_tools.catalog import ToolCatalog
from bridge.personal_tools.commands import ToolCommands
from bridge.personal_tools.drafts import DraftStore
from bridge.personal_tools.source import ForgeTools
from bridge.personal_tools.view import SavedToolsView
from bridge.prompt.source import PromptRows
from bridge.recall.wiring import build_recall
from bridge.schedule.commands import ChatNotes, ScheduleCommands
from bridge.schedule.planning import Planner
from bridge.schedule.service import ScheduleService
from bridge.schedule.tools import ScheduleTools
from bridge.screening.screen import secret_kinds
from bridge.senses.decoders import DecoderPool, PoolSettings
from bridge.senses.handlers import SenseLimits
from bridge.senses.pipeline import SensePipeline, default_pipeline
from bridge.skills.commands import SkillCommands
from bridge.skills.forge import SkillForge
from bridge.skills.grades import SkillGrades, TurnLog
from bridge.skills.observer import SkillsObserver
from bridge.skills.tool import SkillTools
from bridge.skills.view import GradedSkills
from bridge.storage.protocol import Database
from bridge.style.store import StyleStore
from bridge.style.view import LearnedStyle
from bridge.types.audit_sink import AuditSink
from bridge.types.backend import Backend
from bridge.types.platform import Platforms
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import ToolSource

if TYPE_CHECKING:
    from forge.runner import SandboxRunner


@dataclass(frozen=True)
class Capabilities:
    """What the capability layer hands the turn and the command table."""

    loadout: Loadout
    tool_sources: tuple[ToolSource, ...]
    command_sets: tuple[CommandSet, ...]
    observers: tuple[TurnObserver, ...]
    closers: tuple[Callable[[], object], ...] = ()  # run by `Roost.aclose()`
    exchanges: ExchangeLog | None = None  # stored exchanges are indexed for recall


def build_access(
    settings: Settings, db: Database, clock: Callable[[], float], platforms: Platforms
) -> tuple[TenantResolver, PairingStore]:
    """Who is who: loopback, configured identities of each platform, then pairings to
    configured tenants (the caller loads the pairing mirror: `PairingStore.load`)."""
    pairing = PairingStore(db, clock)
    barred = functools.partial(forgetting, settings.home)  # an unfinished `roost forget`
    return TenantResolver(access_rules(settings, pairing, platforms), barred), pairing


def access_rules(settings: Settings, pairing: PairingStore, platforms: Platforms) -> list[Rule]:
    """The resolver's rules for `settings` (at start, and again on every config reload);
    ConfigError when a `<platform>_ids` list cannot be used."""
    known = configured_tenants(settings.tenants, settings.local_tenant)
    return [
        loopback_rule(settings.local_tenant, platforms.loopback()),
        web_token_rule(settings.tenants.__contains__),
        identity_rule(identity_map(settings.tenants, platforms)),
        pairing.rule(known.__contains__),
    ]


def build_capabilities(
    settings: Settings,
    database: Database,
    chats: ChatSettings,
    audit: AuditSink,
    runner: SandboxRunner,
    clock: Callable[[], float],
    extra_tools: Sequence[ToolSource] = (),
    schedule: ScheduleService | None = None,
    models: ModelRegistry | None = None,
    judge: OutcomeJudge | None = None,
    quota: TenantQuota | None = None,
    platforms: Platforms | None = None,
    chat_notes: Mapping[str, ChatNotes] | None = None,
    terminal_tenant: str | None = None,
) -> Capabilities:
    """Loadout, skills, learned style and personal tools over one database and file cache.

    `extra_tools` (tests, benchmarks) are offered to the model after the built-in sources;
    with a `schedule`, /remind, /every, /jobs, /job and the schedule tools are added;
    with a `judge`, outcome grading asks it about follow-ups it left neutral. The
    grades, the turn log and the learned style run on `chats`' `Database` and share its
    prompt rows (`TableChanges`).
    """
    roots = (str(settings.home), str(persona_dirs(settings)[0]))
    watch = DirWatch.open(roots)  # inotify: unchanged files cost no stat
    files = FileCache(watch=watch)
    database, changes = chats.changes.db, chats.changes
    grades = SkillGrades(database, changes)
    catalog = ToolCatalog(files, lambda: int(clock() * 1000))
    loadout = build_loadout(
        settings,
        chats,
        audit,
        skills=GradedSkills(grades, files),
        style=LearnedStyle(StyleStore(database, changes)),
        tools=SavedToolsView(catalog),
        hold=models.hold if models is not None else None,
        styles=platforms.styles() if platforms is not None else None,
        files=files,
    )
    corrections = build_corrections(loadout, audit, clock)
    # per chat, until saved or expired; a chat without drafts costs no statement (`changes`)
    drafts = DraftStore(database, lambda: int(clock() * 1000), changes=changes)
    skill_forge = SkillForge(grades, audit, loadout.vault.values)  # skill_propose, /skill save
    if judge is not None:  # what the judge sees is masked like what the model sees
        judge.use_masks(loadout.vault.masker)
    planner = None
    if schedule is not None:  # its hints name whom a plain `roost chat` runs as
        terminal = terminal_tenant or settings.local_tenant
        planner = Planner(schedule, audit, loadout.vault.masker, local_tenant=terminal)
    mcp = McpTools({t: r.mcp for t, r in settings.tenants.items()}, audit, settings.home / "mcp")
    on, embedder = settings.recall, embeddings_client(settings.llm)
    recall = build_recall(
        database,
        on.enabled,
        loadout.vault.masker,
        audit,
        secret_kinds,
        on.retention_days,
        embedder,
        settings.llm.embeddings.batch,
    )
    if recall.backfill is not None:  # vectors an import or a crash left undone
        recall.backfill.wake_all(settings.home)
    vector_closers = (
        (embedder.aclose, recall.backfill.aclose)  # closers run in reverse: the task first
        if recall.backfill is not None and embedder is not None
        else ()
    )
    return Capabilities(
        loadout,
        (
            loadout.tool_source,
            SkillTools(skill_forge),
            ForgeTools(
                runner,
                drafts,
                catalog,
                loadout.vault.reveal,
                audit,
                loadout.vault.masker,
                quota.room if quota is not None else None,  # a call writes what fits
            ),
            *((ScheduleTools(planner),) if planner else ()),
            mcp,
            *recall.tools,
            *extra_tools,
        ),
        (
            *loadout.command_sets,
            SkillCommands(grades, files, skill_forge),
            ToolCommands(drafts, catalog, audit),
            *((ScheduleCommands(planner, audit, chat_notes),) if planner else ()),
            ExportCommands(settings.home, database, audit, clock, quota),
            corrections[0],
            *recall.commands,
        ),
        (
            PromptRows(loadout.prompt),  # first: the prompt's rows current for the turn
            SkillsObserver(grades, TurnLog(database), files, clock, judge),
            mcp,
            corrections[1],
            *((QuotaObserver(quota),) if quota is not None else ()),  # tools wrote: measure
        ),
        (*((watch.close,) if watch else ()), mcp.aclose, recall.indexer.aclose, *vector_closers),
        recall.indexer,
    )


def build_corrections(
    loadout: Loadout, audit: AuditSink, clock: Callable[[], float]
) -> tuple[CorrectionCommands, CorrectionObserver]:
    """Corrections that stick: offered by an observer, kept by /yes (bridge.corrections)."""
    offers = Offers(clock)
    keeper = Keeper(loadout.memory, audit, loadout.vault.values)
    return CorrectionCommands(offers, keeper, loadout.tidy), CorrectionObserver(offers)


def model_commands(
    models: ModelRegistry,
    meter: UsageMeter,
    chats: ChatSettings,
    audit: AuditSink,
    clock: Callable[[], float],
) -> tuple[CommandSet, ...]:
    """/model (this chat's model) and /usage (tokens and budgets of the tenant)."""
    return (
        ModelCommands(models, chats, audit),
        UsageCommands(meter.store, meter.budget, clock),
    )


def _model_line(backend: Backend, models: ModelRegistry | None) -> Callable[[CommandContext], str]:
    """/status's model line: this chat's named model, or the one backend."""
    if models is None:
        return lambda ctx: backend.describe()
    return lambda ctx: models.status_line(ctx.tenant, ctx.inbound.channel, ctx.inbound.chat)


def build_commands(
    sessions: SessionStore,
    backend: Backend,
    command_sets: Sequence[CommandSet],
    pairing: PairingStore | None = None,
    audit: AuditSink | None = None,
    models: ModelRegistry | None = None,
    meter: UsageMeter | None = None,
    channels: Callable[[], Sequence[str]] = tuple,
    running: RunningTurns[SessionKey] | None = None,
) -> CommandTable:
    """The chat command table: core commands, /start, then each capability's rows.

    `channels` gives /status a line per chat channel (e.g. Telegram reconnecting);
    `running` (the core's running turns) gives /stop."""
    table = CommandTable(())
    line = _model_line(backend, models)
    note = meter.near if meter is not None else None  # /status: a budget nearly used up
    core_commands = CoreCommands(
        lambda: table,
        sessions,
        line,
        pairing,
        audit,
        budget_note=note,
        channels=channels,
        running=running,
    )
    for row in core_commands.commands():
        table.add(row)
    table.add(start_command(lambda: table))
    for command_set in command_sets:
        for row in command_set.commands():
            table.add(row)
    return table


def sense_limits(settings: Settings) -> SenseLimits:
    """The `[limits]` keys of the senses (at start and on every reload)."""
    lim = settings.limits
    return SenseLimits(
        lim.attachment_bytes,
        lim.image_max_side,
        lim.document_chars,
        lim.attachment_keep_hours,
        lim.image_max_pixels,
        lim.document_pages,
        lim.decode_seconds,
        lim.decode_memory_mb,
    )


def build_senses(
    settings: Settings,
    platforms: Platforms,
    models: ModelRegistry | None = None,
    quota: TenantQuota | None = None,
    watch: DirWatch | None = None,
    masks: Callable[[TenantDirs], SplitMask] | None = None,
) -> SensePipeline:
    """Attachments in (photo, document; another kind is one `register` line), files out;
    files are read in decoder processes (`[limits] decoders` at once, fair by tenant); a
    platform's download limit (its declaration) caps what its messages may carry."""
    lim = settings.limits
    decoders = DecoderPool(PoolSettings(lim.decoders, lim.decode_memory_mb * 1024 * 1024))
    return default_pipeline(
        sense_limits(settings),
        settings.home,
        vision_of=models.sees if models is not None else lambda turn: settings.llm.vision,
        vision_models=models.seeing if models is not None else tuple,
        decoders=decoders,
        quota=quota,
        platform_bytes=platforms.download_limits(),
        watch=watch,  # outputs/ listed only when it changed
        masks=masks,  # a document cut at its limit is masked before the cut (no half value)
    )


def build_turns(
    settings: Settings,
    backend: Backend,
    sessions: SessionStore,
    audit: AuditSink,
    caps: Capabilities,
    clock: Callable[[], float],
    models: ModelRegistry | None = None,
    meter: UsageMeter | None = None,
    compactor: Compactor | None = None,
    senses: SensePipeline | None = None,
) -> TurnRunner:
    vault = caps.loadout.vault
    return TurnRunner(
        backend=backend,
        sessions=sessions,
        prompt=caps.loadout.prompt,
        tool_sources=caps.tool_sources,
        audit=audit,
        clock=clock,
        settings=TurnSettings(settings.llm.max_steps, settings.limits.max_reply_chars),
        observers=caps.observers,
        masks=vault.masker,
        user_note=MemoryNotes(
            caps.loadout.memory.store,
            settings.memory,
            caps.loadout.prompt.now_note,
            caps.loadout.files,  # the watched cache: unchanged topics cost no stat
        ).note,
        pick=models.hold if models is not None else None,
        meter=meter,
        compactor=compactor,
        senses=senses,
        exchanges=caps.exchanges,
        ensure=EnsuredDirs(caps.loadout.files.watch).ensure,  # no stat while inotify vouches
    )


def build_core(
    settings: Settings,
    backend: Backend,
    sessions: SessionStore,
    resolver: TenantResolver,
    pairing: PairingStore,
    audit: AuditSink,
    caps: Capabilities,
    clock: Callable[[], float],
    models: ModelRegistry | None = None,
    meter: UsageMeter | None = None,
    compactor: Compactor | None = None,
    senses: SensePipeline | None = None,
    channels: Callable[[], Sequence[str]] = tuple,
    platforms: Platforms | None = None,
) -> Core:
    """The core: tenant access, the chat command table and the turn runner behind one handle.

    With `models`, each chat runs on the model it chose; with a `meter`, turns are
    counted and budgets checked.
    """
    running: RunningTurns[SessionKey] = RunningTurns()  # the core's; /stop ends one
    return Core(
        home_tenant_dirs=lambda t: TenantDirs.of(settings.home, t),
        resolver=resolver,
        pairing=pairing,
        commands=build_commands(
            sessions, backend, caps.command_sets, pairing, audit, models, meter, channels, running
        ),
        running=running,
        turns=build_turns(
            settings, backend, sessions, audit, caps, clock, models, meter, compactor, senses
        ),
        audit=audit,
        masks=caps.loadout.vault.masker,  # every reply leaves through the tenant's masker
        clock=clock,
        limits=CoreLimits(settings.limits.max_message_chars),
        titles={p.name: p.title for p in platforms} if platforms is not None else None,
    )
