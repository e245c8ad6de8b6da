"""A turn's audit batch is queued before its exchange is stored, so the store's write
runs while the batch syncs; the turn returns only once the batch is durable."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from bridge.app.build import build
from bridge.core.config import Settings
from bridge.core.sessions import SessionKey
from bridge.types.audit_sink import Event, MemoryAudit
from bridge.types.backend import ChatMessage
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

        async def watched(*args: Any, **kwargs: Any) -> tuple[ChatMessage, ...]:
            seen.append((audit.queued.is_set(), audit.answered_durable))
            return await append(*args, **kwargs)

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


async def test_the_files_a_tool_wrote_are_looked_for_while_the_batch_syncs(
    settings: Settings, clock: Clock
) -> None:
    """The look into `outputs/` after the answer runs while the batch is held, not after it;
    the file still goes out with the reply, which comes only once the batch is durable."""
    audit = GatedAudit()
    roost = await build(settings, backend=ScriptedBackend("see the file"), audit=audit, clock=clock)
    try:
        runner = roost.core._turns
        senses = runner._senses
        assert senses is not None
        looked: list[bool] = []
        handed_out, append = senses.handed_out, runner.sessions.append

        def watched(*args: Any, **kwargs: Any) -> Any:
            looked.append(audit.answered_durable)
            return handed_out(*args, **kwargs)

        stored: list[bool] = []

        async def writes_a_file(
            key: SessionKey, *args: Any, **kwargs: Any
        ) -> tuple[ChatMessage, ...]:
            # during the turn, after the model: as a tool's file would be there by now
            (roost.core._dirs_of(key.tenant).outputs / "report.txt").write_text("42")
            kept = await append(key, *args, **kwargs)
            stored.append(True)
            return kept

        senses.handed_out = watched  # type: ignore[method-assign]
        runner.sessions.append = writes_a_file  # type: ignore[method-assign]
        turn = asyncio.create_task(roost.core.handle(Inbound("web", "local", "c1", "hi", "8")))
        await audit.queued.wait()
        await until(lambda: stored, "the exchange stored")  # while the batch is held
        for _ in range(20):
            await asyncio.sleep(0)
        assert not turn.done()  # not done before its records are durable
        audit.release.set()
        final = await turn
        assert audit.answered_durable
        assert looked == [False]  # looked for while the batch was still held
        assert [f.name for f in final.files] == ["report.txt"]
    finally:
        await roost.aclose()
