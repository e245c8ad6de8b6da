"""The async face of memory, shared by the model's tools and the chat commands.

`Memory` takes a per-tenant asyncio lock around the file store, screens what
is saved (secrets, vault values, invisible characters, instructions) and
emits the audit events `memory.saved`, `memory.deleted`, `memory.undone`
and `memory.refused` with names and sizes only, never content.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from bridge.core.locks import TenantLocks
from bridge.memory import journal
from bridge.memory.files import MemoryInputError, Topic, usage_label
from bridge.memory.store import MemoryRefused, MemoryStore, Provenance, SaveResult
from bridge.screening.screen import refusal, screen
from bridge.types.audit_sink import AuditSink

SecretsOf = Callable[[Path], Mapping[str, str]]


class Memory:
    """The async face: per-tenant lock, screening, audit. Shared by tools and commands."""

    def __init__(
        self,
        store: MemoryStore,
        audit: AuditSink,
        secrets_of: SecretsOf,
        locks: TenantLocks | None = None,
    ) -> None:
        self.store = store
        self._audit = audit
        self._secrets_of = secrets_of
        self._locks = locks or TenantLocks()

    async def save(
        self,
        tenant: str,
        root: Path,
        name: str,
        type_: str,
        description: str,
        content: str,
        prov: Provenance,
        now: float,
    ) -> SaveResult:
        reasons = screen("\n".join((name, description, content)), self._secrets_of(root).values())
        if reasons:
            await self._audit.emit(
                "memory.refused",
                tenant,
                {"by": prov.by, "reasons": len(reasons), "chars": len(content)},
            )
            raise MemoryRefused(refusal("this memory", reasons))
        async with self._locks.hold(root, "memory"):
            try:
                result = self.store.save(root, name, type_, description, content, prov, now)
            except MemoryInputError as exc:
                raise MemoryRefused(f"Not saved: {exc}. Nothing was written.") from None
        await self._audit.emit(
            "memory.saved",
            tenant,
            {
                "name": result.topic.name,
                "type": type_,
                "chars": len(content),
                "created": result.created,
                "by": prov.by,
                "channel": prov.channel,
                "chat": prov.chat,
                "msg_id": prov.msg_id,
                "index_chars": result.used,
            },
        )
        return result

    async def delete(self, tenant: str, root: Path, name: str, by: str, now: float) -> Topic | None:
        async with self._locks.hold(root, "memory"):
            topic = self.store.delete(root, name, now)
        if topic is not None:
            await self._audit.emit(
                "memory.deleted",
                tenant,
                {"name": topic.name, "type": topic.type, "chars": len(topic.content), "by": by},
            )
        return topic

    async def undo(self, tenant: str, root: Path) -> journal.Change | None:
        async with self._locks.hold(root, "memory"):
            change = self.store.undo(root)
        if change is not None:
            await self._audit.emit(
                "memory.undone",
                tenant,
                {"name": change.name, "op": change.op, "files": len(change.before)},
            )
        return change

    def usage(self, root: Path) -> str:
        return usage_label(self.store.used(root), self.store.memory_cap)
