"""A roost whose Telegram channel is wired as the daemon wires it: durable inbox and outbox.

`durable(settings, fake, ...)` builds a roost in process, the Telegram
channel with its `UpdateInbox` (owner `owner`: a second context on the same
home is "the next process"), the outbox hook for undelivered replies and the
outbox delivered part by part, and the running `ScheduleLoop` that delivers
it; everything stops in reverse order. `Gate` is a model that answers
"echo: <message>" only once let through, so updates can pile up.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridge.app.build import build
from bridge.app.channels_up import undelivered_hook
from bridge.app.schedule_loop import ScheduleLoop
from bridge.channels.telegram.channel import TelegramChannel, TelegramOptions
from bridge.channels.telegram.inbox import UpdateInbox
from bridge.core.config import Settings
from bridge.types.audit_sink import MemoryAudit
from bridge.types.backend import Finish, ModelEvent, ModelRequest, TextDelta
from tests.telegram.conftest import NO_DRAFTS, TOKEN, Running
from tests.telegram.fake_bot_api import FakeBotAPI

SOURCE = f"telegram:{TOKEN.partition(':')[0]}"


class Gate:
    """A model that answers "echo: <last message>" once `open()` was called."""

    name = "gate"

    def __init__(self, is_open: bool = False) -> None:
        self.opened = asyncio.Event()
        if is_open:
            self.opened.set()
        self.asked: list[str] = []

    def open(self) -> None:
        self.opened.set()

    def describe(self) -> str:
        return "gated echo model"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        text = str(request.messages[-1].content)
        self.asked.append(text)
        await self.opened.wait()
        yield TextDelta(f"echo: {text}")
        yield Finish("stop")

    async def aclose(self) -> None:
        return None


@dataclass
class Durable(Running):
    schedule: ScheduleLoop | None = None  # delivers the outbox (start() it when deliver=False)

    def deliver_outbox(self) -> None:
        assert self.schedule is not None
        self.schedule.deliveries.add("telegram", self.channel.deliver)
        self.schedule.start()


@contextlib.asynccontextmanager
async def durable(
    settings: Settings,
    fake: FakeBotAPI,
    backend: Any,
    *,
    owner: str = "first",
    options: TelegramOptions = NO_DRAFTS,
    web_app: Any = None,
    deliver: bool = True,
) -> AsyncIterator[Durable]:
    audit = MemoryAudit()
    roost = await build(settings, backend=backend, audit=audit)
    loop = ScheduleLoop(roost)
    try:
        channel = TelegramChannel(
            settings.telegram,
            roost.core.answer,
            roost.command_list,
            options,
            undelivered=undelivered_hook(roost),
            inbox=UpdateInbox(roost.database, SOURCE, owner),
            parts=roost.schedule.outbox.parts,
        )
        if web_app is not None:
            channel.mount(web_app)
        try:
            await channel.start()
            running = Durable(roost, channel, backend, audit, fake, schedule=loop)
            if deliver:
                running.deliver_outbox()
            yield running
        finally:
            await loop.stop()
            await roost.core.drain(0)
            await channel.stop()
    finally:
        await roost.aclose()


async def until(predicate: Callable[[], bool], limit_s: float = 60.0) -> None:
    """Poll `predicate` (a database read, say) until it holds; a hang guard, not a timer."""
    async with asyncio.timeout(limit_s):
        while not predicate():
            await asyncio.sleep(0.02)


def inbox_rows(home: Path) -> list[tuple[int, str, str]]:
    """(update_id, state, payload) of every stored update, read as another process would."""
    with contextlib.closing(sqlite3.connect(home / "roost.db")) as conn:
        rows = conn.execute(
            "SELECT update_id, state, payload FROM channel_inbox ORDER BY update_id"
        ).fetchall()
    return [(int(u), str(s), str(p)) for u, s, p in rows]


def outbox_rows(home: Path) -> list[tuple[str, str, str]]:
    """(key, state, text) of every outbox entry."""
    with contextlib.closing(sqlite3.connect(home / "roost.db")) as conn:
        rows = conn.execute("SELECT key, state, text FROM outbox ORDER BY id").fetchall()
    return [(str(k), str(s), str(t)) for k, s, t in rows]
