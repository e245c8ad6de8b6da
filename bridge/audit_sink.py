"""The seam through which every state change is recorded.

The core and the loadout call `AuditSink.emit(event, tenant, details)`;
the audit chain (`bridge/audit/`) implements it and enforces that details
carry metadata only. `NullAudit` is for tools and tests that need no chain.
This module imports nothing from the project.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


class AuditSink(Protocol):
    async def emit(self, event: str, tenant: str | None, details: Mapping[str, object]) -> None:
        """Record one event durably; return only once it is written."""
        ...


class NullAudit:
    """Records nothing (`roost prompt`, unit tests)."""

    async def emit(self, event: str, tenant: str | None, details: Mapping[str, object]) -> None:
        return None


class MemoryAudit:
    """Keeps events in a list: a tiny fake for tests."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str | None, dict[str, object]]] = []

    async def emit(self, event: str, tenant: str | None, details: Mapping[str, object]) -> None:
        self.events.append((event, tenant, dict(details)))
