"""A turn's audit batch is queued before its exchange is stored, so the store's write
runs while the batch syncs; the turn returns only once the batch is durable."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from bridge.app.build import build
from bridge.app.metrics import MeteredAudit, Metrics
from bridge.core.config import Settings
from bridge.core.sessions import SessionKey
from bridge.types.audit_sink import Event, MemoryAudit, TurnEvents
from bridge.types.messages import Inbound
from tests.conftest import Clock, ScriptedBackend
from tests.waits import until


class GatedAudit(MemoryAudit):
    """Holds the batch with `message.answered` until released (a slow fdatasync)."""

    def __init__(self) -> None:
        super().__init__()
        self.queued = asyncio.Event()
        self.release = asyncio.Event()
        self.answered_durable = False

    async def emit_many(self, events: Sequence[Event]) -> None:
        answered = any(e[0] == "message.answered" for e in events)
        if answered:
            self.queued.set()
            await self.release.wait()
        await super().emit_many(events)
        self.answered_durable = self.answered_durable or answered


async def test_the_exchange_is_stored_while_the_batch_syncs(
    settings: Settings, clock: Clock
) -> None:
    audit = GatedAudit()
    backend = ScriptedBackend("stored meanwhile")
    roost = await build(settings, backend=backend, audit=audit, clock=clock)
    try:
        sessions = roost.core._turns.sessions
        seen: list[tuple[bool, bool]] = []
        append = sessions.append

        async def watched(*args: Any, **kwargs: Any) -> None:
            seen.append((audit.queued.is_set(), audit.answered_durable))
            await append(*args, **kwargs)

        sessions.append = watched  # type: ignore[method-assign]
        turn = asyncio.create_task(roost.core.handle(Inbound("web", "local", "c1", "hi", "7")))
        await audit.queued.wait()
        await until(lambda: seen, "the exchange stored")  # while the batch is held
        assert seen == [(True, False)]
        for _ in range(20):
            await asyncio.sleep(0)
        assert not turn.done()  # not done before its records are durable
        audit.release.set()
        final = await turn
        assert final.text == "stored meanwhile" and audit.answered_durable
        assert [e[0] for e in audit.events][-1] == "message.answered"
        stored = await sessions.load(SessionKey("local", "web", "c1"), clock())
        assert [m.content for m in stored.history] == ["hi", "stored meanwhile"]
    finally:
        await roost.aclose()


async def test_with_the_chain_the_batch_is_queued_at_once_and_awaited_after_the_store(
    settings: Settings, clock: Clock
) -> None:
    """The real chain queues a turn's batch without a task (`queue_many`): the exchange
    is stored while it syncs, the turn ends only once it is durable, and /metrics counts
    the batch then."""
    backend = ScriptedBackend("queued at once")
    roost = await build(settings, backend=backend, clock=clock)
    try:
        metered = roost.core._turns._audit
        chain = metered.inner
        release = asyncio.Event()
        held: list[asyncio.Future[Any]] = []
        queue = chain.queue_many

        def gated(events: Sequence[Event]) -> asyncio.Future[Any]:
            durable = queue(events)
            if not any(e[0] == "message.answered" for e in events):
                return durable
            shown: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

            async def later() -> None:
                seq = await durable
                await release.wait()  # a slow sync
                shown.set_result(seq)

            held.append(asyncio.ensure_future(later()))
            return shown

        chain.queue_many = gated
        sessions = roost.core._turns.sessions
        seen: list[int] = []
        append = sessions.append

        async def watched(*args: Any, **kwargs: Any) -> None:
            seen.append(len(held))
            await append(*args, **kwargs)

        sessions.append = watched  # type: ignore[method-assign]
        batches = metered._metrics._histograms.get("roost_audit_batch_size", {})
        before = sum(h.count for h in batches.values())
        turn = asyncio.create_task(roost.core.handle(Inbound("web", "local", "c1", "hi", "8")))
        await until(lambda: seen, "the exchange stored")
        assert seen == [1], "the batch was queued before the store"
        for _ in range(20):
            await asyncio.sleep(0)
        assert not turn.done()  # not done before its records are durable
        counted = metered._metrics._histograms.get("roost_audit_batch_size", {})
        assert sum(h.count for h in counted.values()) == before, "counted once durable only"
        release.set()
        final = await turn
        assert final.text == "queued at once"
        counted = metered._metrics._histograms["roost_audit_batch_size"]
        assert sum(h.count for h in counted.values()) == before + 1
    finally:
        await roost.aclose()


async def test_a_queueing_error_is_the_futures_and_a_failed_batch_is_not_counted() -> None:
    class Broken:
        async def emit(self, *a: object) -> None: ...
        async def emit_many(self, events: Sequence[Event]) -> None: ...

        def queue_many(self, events: Sequence[Event]) -> asyncio.Future[Any]:
            raise RuntimeError("audit chain is not open")

    events = TurnEvents()
    assert events.queued(MemoryAudit()) is None  # no `queue_many`: none taken
    events.add("message.received", "local", {"channel": "web"})
    assert events.queued(MemoryAudit()) is None and len(events.events) == 1
    failed = events.queued(Broken())
    assert failed is not None and not events.events
    with pytest.raises(RuntimeError, match="not open"):
        await failed
    metrics = Metrics()
    sink = asyncio.get_running_loop().create_future()

    class Failing(Broken):
        def queue_many(self, events: Sequence[Event]) -> asyncio.Future[Any]:
            return sink

    metered = MeteredAudit(Failing(), metrics)
    assert MeteredAudit(MemoryAudit(), metrics).queue_many([]) is None
    done = metered.queue_many([("message.received", "local", {"channel": "web"})])
    assert done is sink
    sink.set_exception(OSError("no space"))
    with pytest.raises(OSError):
        await done
    await asyncio.sleep(0)  # the done callback has run
    assert "roost_audit_batch_size" not in metrics._histograms
