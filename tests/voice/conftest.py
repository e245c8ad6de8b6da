"""A roost whose Telegram channel and audio run against the fakes, over real HTTP.

`voiced(home, ...)` starts FakeBotAPI and FakeOpenAI (chat completions and the
audio endpoints), builds a roost whose [llm] is the fake (so [llm.transcribe]
and [llm.speech] default to it), and starts the Telegram channel wired the
way `bridge.app.channels_up.telegram_channel` wires it: the voice front
around the core's answer, the inbox gate and the speak hook.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridge.app.build import Roost, build
from bridge.channels.telegram.channel import TelegramChannel
from bridge.core.config import load_settings
from bridge.types.audit_sink import MemoryAudit
from tests.fakes.fake_openai import FakeOpenAI, Text, last_user_text
from tests.telegram.conftest import ALICE, NO_DRAFTS, TOKEN
from tests.telegram.fake_bot_api import FakeBotAPI

KEY = "sk-voice-test-key-0123456789"
HEARD = "(voice note, transcribed) "


def answer_of(body: dict[str, Any]) -> Text:
    """The model's answer: it repeats what it was told, without the time note."""
    said = last_user_text(body).split("\n")[-1].removeprefix(HEARD)
    return Text(f"Sure. You said: {said}")


@dataclass
class Voiced:
    roost: Roost
    channel: TelegramChannel
    bot: FakeBotAPI
    model: FakeOpenAI
    audit: MemoryAudit

    def events(self, name: str) -> list[dict[str, Any]]:
        return [dict(d) for e, _, d in self.audit.events if e == name]

    def user_texts(self) -> list[str]:
        return [last_user_text(b) for b in self.model.requests]


@contextlib.asynccontextmanager
async def voiced(
    home: Path,
    *,
    llm: dict[str, Any] | None = None,
    transcribe: dict[str, Any] | None = None,
    **telegram: Any,
) -> AsyncIterator[Voiced]:
    """`llm` replaces the [llm] table (default: the fake, with `transcribe` as
    [llm.transcribe]); `telegram` adds [telegram] keys."""
    async with (
        FakeBotAPI(TOKEN, max_poll_s=2.0) as bot,
        FakeOpenAI(api_key=KEY, responder=answer_of) as model,
    ):
        settings = load_settings(
            home=home,
            llm=llm
            if llm is not None
            else {
                "base_url": model.base_url,
                "api_key": KEY,
                "model": "m",
                "transcribe": transcribe or {},
            },
            telegram={"token": TOKEN, "api_base_url": bot.base_url, **telegram},
            tenants={"alice": {"telegram_ids": [ALICE]}},
        )
        audit = MemoryAudit()
        roost = await build(settings, audit=audit)
        try:
            channel = TelegramChannel(
                settings.telegram,
                roost.core.answer,
                roost.command_list,
                NO_DRAFTS,
                voice_inbox=roost.voice.gate("telegram"),
                speak=roost.voice.speak_hook("telegram", settings.telegram.reply_voice_to_voice),
            )
            await channel.start()
            try:
                yield Voiced(roost, channel, bot, model, audit)
            finally:
                await channel.stop()
        finally:
            await roost.aclose()
