"""A roost with the real Telegram channel (fake Bot API), the OpenAI backend (fake server)
and the senses wired as `serve` wires them (`telegram_files_in`)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridge.app.build import Roost, build
from bridge.app.channels_up import telegram_files_in
from bridge.channels.telegram.channel import TelegramChannel
from bridge.core.config import Settings, load_settings
from bridge.llm.openai import OpenAIBackend
from bridge.types.audit_sink import MemoryAudit
from tests.fakes.fake_openai import FakeOpenAI
from tests.telegram.conftest import ALICE, NO_DRAFTS, TOKEN
from tests.telegram.fake_bot_api import FakeBotAPI

API_KEY = "sk-test-key-000000000000"
BOB = 222222


def settings_for(home: Path, fake: FakeBotAPI, model: FakeOpenAI, **extra: Any) -> Settings:
    llm = {"provider": "openai", "base_url": model.base_url, "api_key": API_KEY, "model": "m1"}
    return load_settings(
        home=home,
        telegram={"token": TOKEN, "api_base_url": fake.base_url},
        tenants={"alice": {"telegram_ids": [ALICE]}, "bob": {"telegram_ids": [BOB]}},
        llm={**llm, **extra.pop("llm", {})},
        **extra,
    )


@dataclass
class Senses:
    roost: Roost
    fake: FakeBotAPI
    model: FakeOpenAI
    audit: MemoryAudit

    def texts(self, chat: int) -> list[str]:
        return [m.text for m in self.fake.sent_to(chat)]

    def said(self, chat: int, part: str) -> bool:
        return any(part in t for t in self.texts(chat))

    async def wait_text(self, chat: int, part: str) -> str:
        await self.fake.wait_until(lambda: self.said(chat, part))
        return next(t for t in self.texts(chat) if part in t)


@contextlib.asynccontextmanager
async def senses_running(home: Path, *, vision: bool = True, **extra: Any) -> AsyncIterator[Senses]:
    async with (
        FakeOpenAI(api_key=API_KEY, models=["m1", "m2"]) as model,
        FakeBotAPI(TOKEN, max_poll_s=2.0) as fake,
    ):
        llm = {"vision": vision, **extra.pop("llm", {})}
        settings = settings_for(home, fake, model, llm=llm, **extra)
        audit = MemoryAudit()
        backend = OpenAIBackend(model.base_url, API_KEY, "m1", max_retries=0)
        roost = await build(settings, backend=backend, audit=audit)
        channel = TelegramChannel(
            settings.telegram,
            roost.core.answer,
            roost.command_list,
            NO_DRAFTS,
            files_in=telegram_files_in(settings, roost),
        )
        try:
            await channel.start()
            yield Senses(roost, fake, model, audit)
        finally:
            await channel.stop()
            await roost.aclose()
