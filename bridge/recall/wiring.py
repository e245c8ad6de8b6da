"""The recall capability's parts, built together: the indexer, the search, the tool, /recall.

The app's wiring calls `build_recall` once; `Wired.indexer` is the turn's
`ExchangeLog` (every stored exchange is indexed, off the reply's path) and is
closed with the roost (what it has queued is written first). The index lives
in the `Database` the app passes (`bridge.recall.index`).
With an embedder (`[llm.embeddings]`), a `Backfill` hears of every insert
(`Indexer.listen`) and computes vectors in the background, and the search
fuses them with the words (`Recall(embedder=...)`).
With recall disabled the indexer records nothing and no tool or command is
offered (imports still work: `roost import` builds its own indexer).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from bridge.recall.backfill import Backfill
from bridge.recall.embedder import Embedder
from bridge.recall.indexer import Indexer, Screen
from bridge.recall.service import Recall
from bridge.recall.tools import RecallCommands, RecallTools
from bridge.storage.protocol import Database
from bridge.types.audit_sink import AuditSink
from bridge.types.tenant_dirs import TenantDirs


class TextMask(Protocol):
    def mask(self, text: str) -> str: ...


@dataclass(frozen=True)
class Wired:
    indexer: Indexer
    recall: Recall
    tools: tuple[RecallTools, ...]
    commands: tuple[RecallCommands, ...]
    backfill: Backfill | None = None


class VaultMask:
    """The indexer's mask step from the vault's per-tenant masker; `bind(dirs)` looks the
    masker up once for a batch (the lookup stats the vault's files)."""

    def __init__(self, masker_of: Callable[[TenantDirs], TextMask]) -> None:
        self._masker_of = masker_of

    def __call__(self, dirs: TenantDirs, text: str) -> str:
        return self._masker_of(dirs).mask(text)

    def bind(self, dirs: TenantDirs) -> Callable[[str], str]:
        return self._masker_of(dirs).mask


def vault_mask(masker_of: Callable[[TenantDirs], TextMask]) -> VaultMask:
    """The indexer's mask step from the vault's per-tenant masker."""
    return VaultMask(masker_of)


def build_recall(
    db: Database,
    enabled: bool,
    masker_of: Callable[[TenantDirs], TextMask],
    audit: AuditSink | None,
    screen: Screen,
    retention_days: int = 0,
    embedder: Embedder | None = None,
    batch: int = 64,
) -> Wired:
    indexer = Indexer(db, vault_mask(masker_of), enabled, screen, retention_days)
    if not enabled:
        return Wired(indexer, Recall(indexer, audit), (), ())
    backfill = Backfill(embedder, indexer, batch) if embedder is not None else None
    if backfill is not None:
        indexer.listen(backfill.wake)
    recall = Recall(indexer, audit, embedder=embedder)
    return Wired(indexer, recall, (RecallTools(recall),), (RecallCommands(recall),), backfill)
