"""Turns still running at shutdown are cancelled by `Core.drain` and audited as such."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from bridge.app.build import build
from bridge.audit import verify
from bridge.audit.verify import tail
from bridge.core.config import Settings
from bridge.types.backend import ModelEvent, ModelRequest
from tests.conftest import Clock, web_msg


class HangingBackend:
    """A model that accepts the request and then never says anything."""

    name = "hanging"

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.requests = 0

    def describe(self) -> str:
        return "a model that hangs"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests += 1
        self.asked.set()
        await asyncio.Event().wait()  # forever, until cancelled
        yield  # type: ignore[misc]  # pragma: no cover

    async def aclose(self) -> None:
        return None


async def test_drain_cancels_a_hung_turn_and_the_chain_records_it(
    settings: Settings, clock: Clock
) -> None:
    backend = HangingBackend()
    roost = await build(settings, backend=backend, clock=clock)
    try:
        turns = [
            asyncio.create_task(roost.core.handle(web_msg("hello?", n, f"c{n}"))) for n in (1, 2)
        ]
        while backend.requests < 2:
            await backend.asked.wait()
            backend.asked.clear()
            await asyncio.sleep(0)
        cancelled = await roost.core.drain(0)
        assert cancelled == 2
        for task in turns:
            assert task.cancelled()
    finally:
        await roost.aclose()
    chain = settings.home / "audit" / "chain.jsonl"
    assert verify(chain).ok
    failed = tail(chain, 10, type="message.failed")
    assert [r["details"] for r in failed] == [
        {"channel": "web", "kind": "cancelled"},
        {"channel": "web", "kind": "cancelled"},
    ]
    assert tail(chain, 10, type="message.answered") == []
    received = tail(chain, 10, type="message.received")
    assert len(received) == 2, "each cancelled turn keeps its received record"


async def test_a_finished_turn_is_not_reported_cancelled(settings: Settings, clock: Clock) -> None:
    from tests.conftest import ScriptedBackend

    roost = await build(settings, backend=ScriptedBackend("done"), clock=clock)
    try:
        final = await roost.core.handle(web_msg("hi", 1))
        assert final.text == "done"
        assert await roost.core.drain(0) == 0
    finally:
        await roost.aclose()
    chain: Path = settings.home / "audit" / "chain.jsonl"
    assert tail(chain, 10, type="message.failed") == []


async def test_a_message_that_comes_while_roost_stops_is_not_taken(
    settings: Settings, clock: Clock
) -> None:
    """From the drain's start on, a new web message is cancelled on arrival, as the drain
    cancels what still runs: the model is not asked and nothing of it is recorded. A push
    channel's still runs (Matrix keeps no inbox to answer it from after a restart), and so
    does a typed `/stop`: it stops the answer the drain waits for."""
    from tests.spine.test_web_restart_kept import PushReply

    backend = HangingBackend()
    roost = await build(settings, backend=backend, clock=clock)
    try:
        running = asyncio.create_task(roost.core.handle(web_msg("first", 1, "c1")))
        await backend.asked.wait()
        draining = asyncio.create_task(roost.core.drain(30))  # waits for the hung turn
        await asyncio.sleep(0)  # the drain has begun
        backend.asked.clear()
        late = asyncio.create_task(roost.core.handle(web_msg("late", 2, "c2")))
        asked = asyncio.create_task(backend.asked.wait())  # the model asked: it was taken
        await asyncio.wait({late, asked}, return_when=asyncio.FIRST_COMPLETED)
        asked.cancel()
        assert backend.requests == 1
        assert late.cancelled()
        pushed = web_msg("pushed", 3, "c3")  # through `answer`, as a push channel's
        backend.asked.clear()
        push = asyncio.create_task(roost.core.answer(pushed, PushReply()))
        asked = asyncio.create_task(backend.asked.wait())
        await asyncio.wait({push, asked}, return_when=asyncio.FIRST_COMPLETED)
        assert backend.requests == 2  # taken: the model is asked
        assert not push.done()
        assert not running.done() and not draining.done()  # the hung turn still runs
        stopped = await roost.core.handle(web_msg("/stop", 4, "c1"))  # typed: still runs
        assert stopped.kind != "error", stopped
        await asyncio.wait({running})  # the answer the drain waited for is stopped
        push.cancel()
        assert await draining == 0
    finally:
        await roost.aclose()
    chain = settings.home / "audit" / "chain.jsonl"
    assert verify(chain).ok
    received = tail(chain, 10, type="message.received")
    assert len(received) == 2, "the late web message left no record"
