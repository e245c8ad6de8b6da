"""What the audit writer thread holds for a waiter: a queued event and its future, and
how a batch's waiters are woken (one call into each event loop)."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass


@dataclass
class Pending:
    event: str
    tenant: str | None
    details: dict[str, object]
    ts: int
    loop: asyncio.AbstractEventLoop | None = None
    future: asyncio.Future[int] | None = None


def flat(batch: list[object]) -> list[Pending]:
    """The events of a batch of queued items (an `emit_many` queues a list)."""
    out: list[Pending] = []
    for item in batch:
        if isinstance(item, Pending):
            out.append(item)
        elif isinstance(item, list):
            out.extend(p for p in item if isinstance(p, Pending))
    return out


def resolve_all(done: list[tuple[Pending, int]], exc: Exception | None) -> None:
    """Wake the waiters of a batch: one call into each event loop, not one per event."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[int], int]]] = {}
    for p, seq in done:
        if p.loop is not None and p.future is not None:
            by_loop.setdefault(p.loop, []).append((p.future, seq))

    def settle(items: list[tuple[asyncio.Future[int], int]]) -> None:
        for fut, seq in items:
            if fut.done():
                continue
            if exc is not None:
                fut.set_exception(exc)
            else:
                fut.set_result(seq)

    for loop, items in by_loop.items():
        with contextlib.suppress(RuntimeError):  # loop already closed
            loop.call_soon_threadsafe(settle, items)
