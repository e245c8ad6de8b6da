"""The async face of memory, shared by the model's tools and the chat commands.

`Memory` takes a per-tenant asyncio lock around the file store, screens what
is saved (secrets, vault values, invisible characters, instructions) and
emits the audit events `memory.saved`, `memory.superseded` (a save replaced
a topic: its old version went into the topic's history), `memory.deleted`,
`memory.undone` (also of a deletion undone by its own button, `ref`) and
`memory.refused` with names, sizes and hashes only, never
content. `read` records a topic's last read (bringing an archived one back). A save that
meets a full disk (ENOSPC, EDQUOT) is refused with a plain "the disk is full".
`consolidate` applies a confirmed tidy-up (`bridge.memory.tidy`) under the same lock.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Mapping

from bridge.core.locks import TenantLocks
from bridge.memory import journal
from bridge.memory.consolidate import Plan
from bridge.memory.files import MemoryInputError, Topic, usage_label
from bridge.memory.history import body_hash
from bridge.memory.store import MemoryRefused, MemoryStore, Provenance, SaveResult
from bridge.screening.screen import refusal, screen
from bridge.types.audit_sink import AuditSink
from bridge.types.tenant_dirs import TenantDirs

SecretsOf = Callable[[TenantDirs], Mapping[str, str]]
DISK_FULL = "Not saved: the disk is full; nothing was saved. Reading still works."
_FULL = (errno.ENOSPC, errno.EDQUOT)


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
        dirs: TenantDirs,
        name: str,
        type_: str,
        description: str,
        content: str,
        prov: Provenance,
        now: float,
    ) -> SaveResult:
        reasons = screen("\n".join((name, description, content)), self._secrets_of(dirs).values())
        if reasons:
            await self._audit.emit(
                "memory.refused",
                dirs.tenant,
                {"by": prov.by, "reasons": len(reasons), "chars": len(content)},
            )
            raise MemoryRefused(refusal("this memory", reasons))
        async with self._locks.hold(dirs.root, "memory"):
            try:
                result = self.store.save(dirs, name, type_, description, content, prov, now)
            except MemoryInputError as exc:
                raise MemoryRefused(f"Not saved: {exc}. Nothing was written.") from None
            except OSError as exc:
                if exc.errno in _FULL:  # the atomic writer left the old files in place
                    raise MemoryRefused(DISK_FULL) from None
                raise
        if result.superseded is not None:  # the old version went into the topic's history
            await self._audit.emit(
                "memory.superseded",
                dirs.tenant,
                {
                    "name": result.topic.name,
                    "old_hash": body_hash(result.superseded),
                    "hash": body_hash(result.topic),
                    "by": prov.by,
                },
            )
        await self._audit.emit(
            "memory.saved",
            dirs.tenant,
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

    async def read(self, dirs: TenantDirs, name: str, now: float) -> Topic | None:
        """A topic read in full (its last read recorded: an archived topic comes back)."""
        topic = self.store.find(dirs, name)
        if topic is not None:
            async with self._locks.hold(dirs.root, "memory"):
                self.store.touch(dirs, [topic.name], "read", now)
        return topic

    async def delete(
        self, dirs: TenantDirs, name: str, by: str, now: float, ref: str = ""
    ) -> Topic | None:
        """Delete a topic; with `ref`, its undo button can revert it later (`undo_ref`)."""
        async with self._locks.hold(dirs.root, "memory"):
            topic = self.store.delete(dirs, name, now, ref)
        if topic is not None:
            await self._audit.emit(
                "memory.deleted",
                dirs.tenant,
                {"name": topic.name, "type": topic.type, "chars": len(topic.content), "by": by},
            )
        return topic

    async def undo(
        self, dirs: TenantDirs, only: str | None = None, ref: str = ""
    ) -> journal.Change | None:
        """Revert the newest change (of topic `only`), or with `ref` the change it names
        (`store.undo_ref`: MemoryRefused when that cannot be undone now)."""
        async with self._locks.hold(dirs.root, "memory"):
            change = self.store.undo_ref(dirs, ref) if ref else self.store.undo(dirs, only)
        if change is not None:
            await self._audit.emit(
                "memory.undone",
                dirs.tenant,
                {"name": change.name, "op": change.op, "files": len(change.before)},
            )
        return change

    async def consolidate(
        self, dirs: TenantDirs, plan: Plan, fingerprint: str, prov: Provenance, now: float
    ) -> int:
        """Apply a confirmed tidy-up (`store.consolidate`) under the tenant's memory lock."""
        async with self._locks.hold(dirs.root, "memory"):
            try:
                return self.store.consolidate(dirs, plan, fingerprint, prov, now)
            except OSError as exc:
                if exc.errno in _FULL:
                    raise MemoryRefused(DISK_FULL) from None
                raise

    def secrets(self, dirs: TenantDirs) -> Mapping[str, str]:
        return self._secrets_of(dirs)

    def usage(self, dirs: TenantDirs) -> str:
        return usage_label(self.store.used(dirs), self.store.memory_cap)
