"""A new platform is one module and one row: a toy channel through the channel table.

The toy channel is the whole adapter a platform needs: it turns "a user sent
text" into an `Inbound`, hands it to the core's `answer` and keeps what the
core sends back. It knows nothing of tenants, pairing or refusals; the real
core (real SQLite pairing store, scripted model) does all of that for it.
Once through `make_channels`/`start_channels` directly, once through the
real `serve()` with the offline model.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path

from bridge.app.build import Roost, build
from bridge.app.serve import (
    CHANNELS,
    ChannelRow,
    Launched,
    make_channels,
    serve,
    start_channels,
    stop_channels,
)
from bridge.core.config import Settings, load_settings
from bridge.core.pairing import PairingStore
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import Answer, Final, Inbound
from tests.conftest import ScriptedBackend
from tests.waits import HANG_S


class ToyChannel:
    """A complete chat platform adapter, in a few lines."""

    def __init__(self, answer: Answer) -> None:
        self._answer = answer
        self.sent: list[Final] = []
        self.running = False

    async def start(self) -> None:
        self.running = True

    async def stop(self) -> None:
        self.running = False

    async def receive(self, user: str, text: str) -> None:
        inbound = Inbound("toy", user, f"dm-{user}", text, uuid.uuid4().hex)
        await self._answer(inbound, self)

    # the Reply the core drives
    def working(self) -> AbstractAsyncContextManager[object]:
        return contextlib.nullcontext()

    async def delta(self, piece: str) -> None:
        return None

    async def send(self, final: Final) -> None:
        self.sent.append(final)


def toy_row(made_toys: list[ToyChannel]) -> ChannelRow:
    def factory(settings: Settings, roost: Roost, made: Mapping[str, Launched]) -> Launched:
        toy = ToyChannel(roost.core.answer)
        made_toys.append(toy)
        return Launched(toy, lambda: "roost: toy channel ready")

    return ChannelRow("toy", lambda settings: True, factory)


def toy_settings(home: Path) -> Settings:
    return load_settings(home=home, web={"enabled": False}, tenants={"carol": {}})


async def test_a_toy_channel_registered_in_the_table_gets_real_answers(home: Path) -> None:
    settings = toy_settings(home)
    backend = ScriptedBackend("Hello Carol, from the real core.")
    roost = await build(settings, backend=backend, audit=MemoryAudit())
    toys: list[ToyChannel] = []
    started: list[Launched] = []
    try:
        made = make_channels(settings, roost, (*CHANNELS, toy_row(toys)))
        assert list(made) == ["toy"], "web is off and no Telegram token: only the toy row"
        await start_channels(made, started)
        (toy,) = toys
        assert toy.running
        await toy.receive("42", "hi")
        await toy.receive("42", "anyone?")
        assert [f.kind for f in toy.sent] == ["refusal"], "a stranger is refused once"
        assert "/pair CODE" in toy.sent[0].text and "Toy user id is 42" in toy.sent[0].text
        code = await roost.pairing.issue("carol")
        await toy.receive("42", f"/pair {code}")
        assert "you now talk to roost as **carol**" in toy.sent[-1].text
        await toy.receive("42", "hello")
        assert toy.sent[-1] == Final("Hello Carol, from the real core.", "answer")
        assert [r.messages[-1].content for r in backend.requests] == ["hello"]
        await toy.receive("42", "/whoami")
        assert "carol" in toy.sent[-1].text
    finally:
        await stop_channels(started)
        await roost.aclose()
    assert not toy.running


async def test_serve_starts_the_table_and_the_toy_channel_talks_to_the_offline_model(
    home: Path,
) -> None:
    settings = load_settings(home=home, web={"enabled": False}, llm={"provider": "offline"})
    toys: list[ToyChannel] = []
    ready = asyncio.Event()
    serving = asyncio.create_task(
        serve(settings, ready=lambda port: ready.set(), channels=(*CHANNELS, toy_row(toys)))
    )
    try:
        await asyncio.wait_for(ready.wait(), HANG_S)
        (toy,) = toys
        await toy.receive("local", "/whoami")  # a stranger on "toy": refused, like Telegram
        assert toy.sent[-1].kind == "refusal"
        code = await issue_code(home, "local")
        await toy.receive("local", f"/pair {code}")
        await toy.receive("local", "what can you do?")
        final = toy.sent[-1]
        assert final.kind == "answer" and final.text
    finally:
        if ready.is_set():  # serve's own SIGTERM handler is installed: a real stop
            os.kill(os.getpid(), signal.SIGTERM)
        else:
            serving.cancel()
    assert await asyncio.wait_for(serving, HANG_S) == 0
    assert not toy.running


async def issue_code(home: Path, tenant: str) -> str:
    """A code in the running daemon's database, issued through a connection of its own
    as `roost pair` would."""
    from bridge.app.database import open_database

    db = await open_database(home / "roost.db")
    try:
        return await PairingStore(db).issue(tenant)
    finally:
        await db.aclose()
