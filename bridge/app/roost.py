"""`Roost`: every long-lived object of one running roost, as `build()` made them.

Its own module so that the channel table (`bridge.app.channels_up`), whose
factories take a `Roost`, and `bridge.app.build`, which reads the table's
platform registry, do not import each other. `bridge.app.build` re-exports it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bridge.app.loadout import Loadout
from bridge.app.metrics import Metrics
from bridge.app.models import ModelRegistry
from bridge.app.voice import Voice
from bridge.core.atomic import remove_orphan_temps
from bridge.core.budgets import UsageMeter
from bridge.core.compactor import Compactor
from bridge.core.config import Settings
from bridge.core.pairing import PairingStore
from bridge.core.quota import TenantQuota
from bridge.core.router import Core
from bridge.core.sessions import SessionStore
from bridge.core.tenants import TenantResolver
from bridge.core.turn import ExchangeLog
from bridge.grading.judge import OutcomeJudge
from bridge.schedule.commands import ChatNotes
from bridge.schedule.service import ScheduleService
from bridge.senses.pipeline import SensePipeline
from bridge.storage.protocol import Database
from bridge.types.audit_sink import AuditSink
from bridge.types.backend import Backend
from bridge.types.platform import Platforms
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import ToolSource

if TYPE_CHECKING:
    from forge.runner import SandboxRunner

Closer = Callable[[], object]
log = logging.getLogger("roost")


@dataclass(frozen=True)
class Roost:
    """Every long-lived object of one roost; `aclose()` ends what it owns, last first."""

    settings: Settings
    database: Database  # the `bridge.storage` protocol: roost.db, or PostgreSQL
    backend: Backend  # the default model's backend at start
    backend_reason: str
    models: ModelRegistry  # every named model; a chat's choice; replaced on reload
    meter: UsageMeter  # token usage and budgets
    audit: AuditSink
    sessions: SessionStore
    loadout: Loadout
    runner: SandboxRunner
    resolver: TenantResolver
    pairing: PairingStore
    schedule: ScheduleService
    tool_sources: tuple[ToolSource, ...]  # what a turn offers; scheduled tool jobs use them
    core: Core
    metrics: Metrics  # counted from the audit events; `/metrics` renders it
    compactor: Compactor  # summaries of long conversations (background tasks)
    judge: OutcomeJudge  # the outcome grader's second opinion (background tasks)
    voice: Voice  # voice notes in, spoken answers out ([llm.transcribe], [llm.speech])
    senses: SensePipeline  # attachments in, files from outputs/ out, the inbox sweep
    quota: TenantQuota  # disk space per tenant: workspace (uploads) and exports
    closers: tuple[Closer, ...]
    platforms: Platforms  # every chat platform's declaration (bridge.types.platform)
    # a channel that can be down registers its /status line here ("telegram: reconnecting…")
    channel_lines: dict[str, Callable[[], str]] = dataclasses.field(default_factory=dict)
    # a channel whose delivery depends on the chat adds /jobs lines here (WhatsApp's window)
    chat_notes: dict[str, ChatNotes] = dataclasses.field(default_factory=dict)
    exchanges: ExchangeLog | None = None  # the search index of stored exchanges (recall)

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
            if dirs.memory.is_dir():
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
        await self.models.aclose()  # the default backend too
        await self.database.aclose()
