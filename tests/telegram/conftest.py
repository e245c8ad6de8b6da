"""A roost with the real python-telegram-bot Application against FakeBotAPI.

`running(...)` builds a roost in process (scripted model, memory audit),
starts the Telegram channel with small poll timeouts, throttle intervals
and retry delays, and stops everything in reverse order. `Running.idle()`
waits until every update pushed so far went all the way through the channel
(a handler in a later group of the same Application counts them), so a test
can say what did *not* happen without waiting a fixed time.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from telegram import Update
from telegram.ext import TypeHandler

from bridge.app.build import Roost, build
from bridge.channels.telegram.channel import TelegramChannel, TelegramOptions
from bridge.channels.telegram.health import Backoff
from bridge.channels.telegram.send import SendPolicy
from bridge.channels.telegram.stream import StreamTiming
from bridge.core.config import Settings, load_settings
from bridge.core.pairing import PairingStore
from bridge.types.audit_sink import MemoryAudit
from tests.conftest import ScriptedBackend
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.waits import until

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"
ALICE = 111111
GROUP = -1001234567890

FAST = TelegramOptions(
    poll_timeout_s=1,
    timing=StreamTiming(interval_s=0.05, first_delay_s=0.05, typing_every_s=0.2),
    send=SendPolicy(backoff_s=0.01, backoff_max_s=0.05, chat_burst=50, chat_rate_per_s=200.0),
    reconnect=Backoff(first_s=0.01, max_s=0.05),
    stop_grace_s=5.0,
)
# answers from a zero-latency model arrive before the first draft would be shown
NO_DRAFTS = TelegramOptions(
    poll_timeout_s=1,
    timing=StreamTiming(interval_s=30.0, first_delay_s=30.0, typing_every_s=0.2),
    send=FAST.send,
    reconnect=FAST.reconnect,
)


@pytest.fixture
async def fake() -> AsyncIterator[FakeBotAPI]:
    async with FakeBotAPI(TOKEN, max_poll_s=2.0) as server:
        yield server


def tg_settings(home: Path, fake: FakeBotAPI, **telegram: Any) -> Settings:
    return load_settings(
        home=home,
        telegram={"token": TOKEN, "api_base_url": fake.base_url, **telegram},
        tenants={"alice": {"telegram_ids": [ALICE]}},
    )


@dataclass
class Running:
    roost: Roost
    channel: TelegramChannel
    backend: ScriptedBackend
    audit: MemoryAudit
    fake: FakeBotAPI
    handled: list[int] = field(default_factory=lambda: [0])  # updates through the channel
    base: int = 0  # updates pushed before this roost started (handled by an earlier one)

    @property
    def pairing(self) -> PairingStore:
        return self.roost.pairing

    async def idle(self) -> None:
        """Every update pushed so far has been handled (answered, refused or ignored)."""
        await until(lambda: self.handled[0] >= self.fake.pushed - self.base, "every update handled")


def count_handled(channel: TelegramChannel, handled: list[int]) -> None:
    """PTB runs an update's handler groups in order: group 1 runs after roost's own."""

    async def seen(update: object, context: object) -> None:
        handled[0] += 1

    channel.app.add_handler(TypeHandler(Update, seen), group=1)


@contextlib.asynccontextmanager
async def running(
    settings: Settings,
    fake: FakeBotAPI,
    backend: Any = None,
    options: TelegramOptions = NO_DRAFTS,
    web_app: Any = None,
    start: bool = True,
) -> AsyncIterator[Running]:
    backend = backend if backend is not None else ScriptedBackend()
    audit = MemoryAudit()
    roost = await build(settings, backend=backend, audit=audit)
    try:
        channel = TelegramChannel(settings.telegram, roost.core.answer, roost.command_list, options)
        if web_app is not None:
            channel.mount(web_app)
        run = Running(roost, channel, backend, audit, fake, base=fake.pushed)
        count_handled(channel, run.handled)
        try:
            if start:
                await channel.start()
            yield run
        finally:
            await channel.stop()
    finally:
        await roost.aclose()


def env_for(home: Path, token: str, base_url: str, **extra: str) -> dict[str, str]:
    config = Path(os.environ["ROOST_CONFIG"])
    config.write_text(f"[tenants.alice]\ntelegram_ids = [{ALICE}]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
    env.update(
        ROOST_HOME=str(home),
        ROOST_CONFIG=str(config),
        ROOST_WEB__PORT="0",
        ROOST_LOG_LEVEL="DEBUG",
        ROOST_LLM__PROVIDER="offline",
        ROOST_TELEGRAM__TOKEN=token,
        ROOST_TELEGRAM__API_BASE_URL=base_url,
        ROOST_LIMITS__SHUTDOWN_GRACE_S="1",
        **extra,
    )
    return env
