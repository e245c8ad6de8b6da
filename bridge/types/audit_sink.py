"""The seam through which every state change is recorded.

The core and the loadout call `AuditSink.emit(event, tenant, details)`;
the audit chain (`bridge/audit/`) implements it and enforces that details
carry metadata only. `NullAudit` is for tools and tests that need no chain.
This module imports nothing from the project.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

Event = tuple[str, str | None, Mapping[str, object]]  # (event, tenant, details)


class AuditSink(Protocol):
    async def emit(self, event: str, tenant: str | None, details: Mapping[str, object]) -> None:
        """Record one event durably; return only once it is written."""
        ...

    async def emit_many(self, events: Sequence[Event]) -> None:
        """Record several events, in order, durably (one write where the sink can)."""
        ...


class TurnEvents:
    """The bookkeeping events of one turn, written together when the turn ends.

    A turn's received/answered/graded events become durable in one batch
    before the reply is returned; state changes made by tools (memory,
    tools, secrets) are still emitted at once by whoever makes them.
    """

    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, event: str, tenant: str | None, details: Mapping[str, object]) -> None:
        self.events.append((event, tenant, dict(details)))

    async def flush(self, sink: AuditSink) -> None:
        events, self.events = self.events, []
        if events:
            await sink.emit_many(events)


class NullAudit:
    """Records nothing (`roost prompt`, unit tests)."""

    async def emit(self, event: str, tenant: str | None, details: Mapping[str, object]) -> None:
        return None

    async def emit_many(self, events: Sequence[Event]) -> None:
        return None


class MemoryAudit:
    """Keeps events in a list: a tiny fake for tests."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str | None, dict[str, object]]] = []

    async def emit(self, event: str, tenant: str | None, details: Mapping[str, object]) -> None:
        self.events.append((event, tenant, dict(details)))

    async def emit_many(self, events: Sequence[Event]) -> None:
        for event, tenant, details in events:
            await self.emit(event, tenant, details)
