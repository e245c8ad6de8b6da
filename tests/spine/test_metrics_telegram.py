"""Telegram send failures on every path, counted and read back through `GET /metrics`.

The daemon's own factories (`channels_up.telegram_channel`, `web_channel`)
make the channels over a real roost; the fake Bot API answers some calls
with Telegram's real error shape (403 "Forbidden: bot was blocked by the
user"). A command reply, the typing indicator, a streamed draft edit and a
final answer that fail are each counted under their own `kind`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
from pydantic import SecretStr

from bridge.app.build import build
from bridge.app.channels_up import telegram_channel, web_channel
from bridge.core.config import Settings, load_settings
from bridge.types.audit_sink import MemoryAudit
from bridge.types.backend import Finish, ModelEvent, ModelRequest, TextDelta
from tests.spine.test_metrics import AUTH, TOKEN, samples
from tests.telegram.conftest import ALICE
from tests.telegram.conftest import TOKEN as BOT_TOKEN
from tests.telegram.fake_bot_api import Failure, FakeBotAPI
from tests.waits import HANG_S

BLOCKED = Failure(403, "Forbidden: bot was blocked by the user")
WAIT_S = HANG_S  # a safety net against a hung run, not a speed check


class GatedBackend:
    """Streams "part one", waits for `go`, streams "part two", waits for `done`."""

    name = "gated"

    def __init__(self) -> None:
        self.go, self.done = asyncio.Event(), asyncio.Event()

    def describe(self) -> str:
        return "gated test model"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta("part one ")
        await self.go.wait()
        yield TextDelta("part two")
        await self.done.wait()
        yield Finish("stop")

    async def aclose(self) -> None:
        return None


def settings_for(home: Path, bot: FakeBotAPI) -> Settings:
    return load_settings(
        home=home,
        telegram={"token": BOT_TOKEN, "api_base_url": bot.base_url},
        tenants={"alice": {"telegram_ids": [ALICE]}},
        web={"port": 0, "metrics": True, "token": SecretStr(TOKEN)},
    )


async def counted(port: int, kind: str, at_least: int = 1) -> dict[str, float]:
    """Scrape /metrics until the failures of `kind` reach `at_least`; the last scrape."""
    name = f'roost_telegram_send_failures_total{{kind="{kind}"}}'
    async with aiohttp.ClientSession(f"http://127.0.0.1:{port}") as http, asyncio.timeout(WAIT_S):
        while True:
            async with http.get("/metrics", headers=AUTH) as r:
                got = samples(await r.text())
            if got.get(name, 0) >= at_least:
                return got
            await asyncio.sleep(0.05)


async def test_every_telegram_send_path_counts_its_failures(home: Path) -> None:
    backend = GatedBackend()
    async with FakeBotAPI(BOT_TOKEN, max_poll_s=1.0) as bot:
        settings = settings_for(home, bot)
        roost = await build(settings, backend=backend, audit=MemoryAudit())
        web = web_channel(settings, roost, {})
        telegram = telegram_channel(settings, roost, {"web": web})
        await web.channel.start()
        await telegram.channel.start()
        port = web.port() if web.port else 0
        try:
            bot.fail("sendMessage", BLOCKED)
            bot.push_text(ALICE, "/help")
            await counted(port, "command")

            typing = len(bot.calls_of("sendChatAction"))
            bot.fail("sendChatAction", BLOCKED)
            bot.push_text(ALICE, "tell me")  # the model holds the turn open: typing is sent
            await bot.wait_call("sendChatAction", typing + 1, WAIT_S)
            await counted(port, "typing")
            await bot.wait_until(
                lambda: any("part one" in m.text for m in bot.sent_to(ALICE)), WAIT_S
            )
            edits = len(bot.calls_of("editMessageText"))
            for _ in range(50):
                bot.fail("editMessageText", BLOCKED)
            backend.go.set()
            await bot.wait_call("editMessageText", edits + 1, WAIT_S)
            await counted(port, "draft")
            backend.done.set()
            got = await counted(port, "reply")
        finally:
            await telegram.channel.stop()
            await web.channel.stop()
            await roost.aclose()
    kinds = {k: v for k, v in got.items() if k.startswith("roost_telegram_send_failures_total")}
    assert kinds['roost_telegram_send_failures_total{kind="command"}'] == 1, kinds
    assert kinds['roost_telegram_send_failures_total{kind="typing"}'] >= 1, kinds
    assert kinds['roost_telegram_send_failures_total{kind="draft"}'] >= 1, kinds
    assert kinds['roost_telegram_send_failures_total{kind="reply"}'] == 1, kinds
    assert 'roost_telegram_send_failures_total{kind="outbox"}' not in kinds
    assert got['roost_model_seconds_count{backend="gated"}'] == 1
