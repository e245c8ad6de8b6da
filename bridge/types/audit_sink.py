"""The seam through which every state change is recorded.

The core and the loadout call `AuditSink.emit(event, tenant, details)`;
the audit chain (`bridge/audit/`) implements it and enforces that details
carry metadata only. `NullAudit` is for tools and tests that need no chain.
This module imports nothing from the project.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

Event = tuple[str, str | None, Mapping[str, object]]  # (event, tenant, details)


class AuditSink(Protocol):
    async def emit(self, event: str, tenant: str | None, details: Mapping[str, object]) -> None:
        """Record one event durably; return only once it is written."""
        ...

    async def emit_many(self, events: Sequence[Event]) -> None:
        """Record several events, in order, durably (one write where the sink can)."""
        ...


# A sink that can queue without waiting may also have `queue_many(events)`: the events
# checked and queued at once, on the caller's loop, and a future done once they are
# durable (None: no events), failed as `emit_many` would fail (bridge.audit.chain).
QueueMany = Callable[[Sequence[Event]], "asyncio.Future[Any] | None"]


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

    async def begin(self, sink: AuditSink) -> asyncio.Future[Any]:
        """Start writing the events and return what to await for their durability, so
        the caller's next steps overlap the write. A sink with `queue_many` has them
        queued before this returns, with no hop through the loop; any other sink's
        `emit_many` runs as a task up to its first wait."""
        events, self.events = self.events, []
        if not events:
            return _done()
        queue_many: QueueMany | None = getattr(sink, "queue_many", None)
        done = queue_many(events) if queue_many is not None else None
        if done is not None:  # None only for no events, which never reach it
            return done
        task = asyncio.ensure_future(sink.emit_many(events))
        await asyncio.sleep(0)
        return task


def _done() -> asyncio.Future[Any]:
    done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    done.set_result(None)
    return done


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
