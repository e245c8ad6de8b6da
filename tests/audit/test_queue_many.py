"""`queue_many`: a turn's audit batch is queued to the writer at once, with no hop through
the loop, and awaited later; what it returns fails, cancels and counts as `emit_many` does."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from audit_helpers import fake_clock

from bridge.app.build import build
from bridge.app.metrics import MeteredAudit, Metrics
from bridge.audit import AuditChain, verify
from bridge.audit import chain as chain_module
from bridge.core.config import Settings
from bridge.types.audit_sink import Event, MemoryAudit, TurnEvents
from bridge.types.backend import ChatMessage
from bridge.types.messages import Inbound
from tests.conftest import Clock, ScriptedBackend
from tests.waits import HANG_S, until

EVENTS: list[Event] = [
    ("message.received", "alice", {"chars": 5}),
    ("outcome.graded", "alice", {}),
    ("message.answered", "alice", {"chars": 7, "ms": 12}),
]


@pytest.fixture
async def chain(tmp_path: Path) -> AsyncIterator[AuditChain]:
    """An open chain at `tmp_path/audit/chain.jsonl` (closed, and so synced, after)."""
    async with AuditChain(tmp_path / "audit" / "chain.jsonl", None, fake_clock()) as opened:
        yield opened


async def written(chain: AuditChain, records: int) -> None:
    """The chain closed (its head synced) verifies and holds `records` records."""
    await chain.aclose()
    result = verify(chain.path)
    assert result.ok and result.records == records, result


def disk_full(fd: int) -> None:
    raise OSError(28, "No space left on device")


def lines(path: Path) -> int:
    return len(path.read_bytes().splitlines()) if path.exists() else 0


async def test_the_batch_is_written_before_the_loop_runs_again(chain: AuditChain) -> None:
    """Queued by the call itself: the writer writes and syncs the batch while this loop's
    thread is still busy (never yielding), and the future says so once the loop runs."""
    done = chain.queue_many(EVENTS)
    assert done is not None and not done.done()
    deadline = time.monotonic() + HANG_S  # an upper bound against a hang only
    while lines(chain.path) < 3 and time.monotonic() < deadline:
        time.sleep(0.001)  # noqa: ASYNC251 - the loop blocked on purpose: no task runs
    assert lines(chain.path) == 3
    assert await done == 3  # the last record's sequence number
    await written(chain, 3)


async def test_nothing_queued_is_none_and_a_bad_event_raises_at_once(
    chain: AuditChain, tmp_path: Path
) -> None:
    assert chain.queue_many([]) is None
    with pytest.raises(ValueError):
        chain.queue_many([EVENTS[0], ("no such event!", "alice", {})])
    await chain.emit_many(EVENTS[:1])  # the refused batch left nothing queued
    await written(chain, 1)
    closed = AuditChain(tmp_path / "other" / "chain.jsonl", None, fake_clock())
    with pytest.raises(RuntimeError, match="not open"):
        closed.queue_many(EVENTS)


async def test_a_cancelled_future_leaves_its_batch_written(chain: AuditChain) -> None:
    """The turn that queued it was cancelled meanwhile: the batch is written all the same."""
    done = chain.queue_many(EVENTS)
    assert done is not None
    done.cancel()
    await chain.emit_many(EVENTS[:1])  # after the cancelled batch in the writer's queue
    await written(chain, 4)


async def test_a_batch_that_cannot_be_written_fails_its_future(
    chain: AuditChain, monkeypatch: pytest.MonkeyPatch
) -> None:
    await chain.emit_many(EVENTS[:1])
    monkeypatch.setattr(chain_module.os, "fdatasync", disk_full)
    done = chain.queue_many(EVENTS)
    assert done is not None
    with pytest.raises(OSError, match="No space"):
        await done
    monkeypatch.undo()
    await chain.emit_many(EVENTS[1:])
    await written(chain, 3)


async def test_metered_batches_are_counted_once_durable_and_never_when_they_fail(
    chain: AuditChain, monkeypatch: pytest.MonkeyPatch
) -> None:
    metrics = Metrics()
    metered = MeteredAudit(chain, metrics)
    done = metered.queue_many(EVENTS)
    assert done is not None
    assert "roost_turns_total{" not in metrics.render()  # queued, not durable yet
    await done
    await asyncio.sleep(0)  # the done callbacks run on the loop, after the waiter's
    assert 'roost_turns_total{outcome="answer"} 1' in metrics.render()
    monkeypatch.setattr(chain_module.os, "fdatasync", disk_full)
    failed = metered.queue_many(EVENTS)
    assert failed is not None
    with pytest.raises(OSError):
        await failed
    await asyncio.sleep(0)
    monkeypatch.undo()
    assert 'roost_turns_total{outcome="answer"} 1' in metrics.render()
    # a sink that only awaits has no queue_many, through the meter too
    assert getattr(MeteredAudit(MemoryAudit(), metrics), "queue_many", None) is None


class _Iterations:
    """Counts the loop's iterations while it runs (a task that yields each time)."""

    def __init__(self) -> None:
        self.n = 0
        self._task = asyncio.create_task(self._count())

    async def _count(self) -> None:
        while True:
            self.n += 1
            await asyncio.sleep(0)

    def stop(self) -> None:
        self._task.cancel()


class _Queuing(MemoryAudit):
    def __init__(self) -> None:
        super().__init__()
        self.futures: list[asyncio.Future[Any]] = []

    def queue_many(self, events: Sequence[Event]) -> asyncio.Future[Any] | None:
        if not events:
            return None
        self.events.extend((e, t, dict(d)) for e, t, d in events)
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.futures.append(done)
        return done


async def test_begin_hands_a_queuing_sink_its_batch_without_a_hop() -> None:
    sink, events = _Queuing(), TurnEvents()
    for event in EVENTS:
        events.add(*event)
    ticks = _Iterations()
    await asyncio.sleep(0)
    before = ticks.n
    durable = await events.begin(sink)
    assert ticks.n == before  # no loop iteration between the call and its return
    assert durable is sink.futures[0] and not durable.done()
    assert [e[0] for e in sink.events] == [e[0] for e in EVENTS] and events.events == []
    nothing = await TurnEvents().begin(sink)  # no events: a future done already
    assert nothing.done() and nothing.result() is None and len(sink.futures) == 1
    # a sink that only awaits: its emit_many runs as a task, up to its first wait
    awaiting, more = MemoryAudit(), TurnEvents()
    more.add(*EVENTS[0])
    task = await more.begin(awaiting)
    assert ticks.n > before and [e[0] for e in awaiting.events] == ["message.received"]
    await task
    ticks.stop()


async def test_a_turn_stores_its_exchange_while_the_real_chain_syncs_its_batch(
    settings: Settings, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real chain: while the writer's `fdatasync` of the turn's batch is held, the
    exchange is stored, and the turn returns only once the sync is let go."""
    held, release = threading.Event(), threading.Event()
    real = os.fdatasync

    def gated(fd: int) -> None:
        if threading.current_thread().name == "audit-writer" and gate_on.is_set():
            held.set()
            release.wait(HANG_S)  # an upper bound against a hang only
        real(fd)

    gate_on = threading.Event()
    monkeypatch.setattr(chain_module.os, "fdatasync", gated)
    roost = await build(settings, backend=ScriptedBackend("stored meanwhile"), clock=clock)
    try:
        sessions = roost.core._turns.sessions
        stored = threading.Event()
        append = sessions.append

        async def watched(*args: Any, **kwargs: Any) -> tuple[ChatMessage, ...]:
            kept = await append(*args, **kwargs)
            stored.set()
            return kept

        sessions.append = watched  # type: ignore[method-assign]
        gate_on.set()
        turn = asyncio.create_task(roost.core.handle(Inbound("web", "local", "c1", "hi", "7")))
        assert await asyncio.to_thread(held.wait, HANG_S)
        await until(stored.is_set, "the exchange stored while the batch's sync is held")
        for _ in range(20):
            await asyncio.sleep(0)
        assert not turn.done() and not release.is_set()  # not before its records are durable
        gate_on.clear()
        release.set()
        final = await turn
        assert final.text == "stored meanwhile"
    finally:
        release.set()
        await roost.aclose()
