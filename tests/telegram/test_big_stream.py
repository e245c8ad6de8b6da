"""A 40k-character streamed reply of the worst Markdown shape never stalls
the daemon: another person's chat is answered while it streams."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from bridge.core.config import load_settings
from bridge.types.backend import Finish, ModelEvent, ModelRequest, TextDelta
from tests.telegram.conftest import ALICE, FAST, TOKEN, running
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.waits import HANG_S

BOB = 222222
WORST = "[a](" * 10_000  # 40k characters: unclosed link heads, the quadratic shape


class TwoChats:
    """Streams WORST to alice in pieces and holds her turn open until bob is
    answered; bob gets a short answer at once."""

    name = "two-chats"

    def __init__(self) -> None:
        self.bob_answered = asyncio.Event()
        self.alice_streamed = asyncio.Event()

    def describe(self) -> str:
        return "two chats"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if request.messages[-1].content == "bob here":
            yield TextDelta("hello bob")
        else:
            for start in range(0, len(WORST), 2_000):
                yield TextDelta(WORST[start : start + 2_000])
                await asyncio.sleep(0.01)  # let a draft render the grown text
            self.alice_streamed.set()
            await asyncio.wait_for(self.bob_answered.wait(), HANG_S)
        yield Finish("stop")

    async def aclose(self) -> None:
        return None


async def test_a_huge_worst_shape_stream_does_not_stall_another_chat(
    home: Path, fake: FakeBotAPI
) -> None:
    settings = load_settings(
        home=home,
        telegram={"token": TOKEN, "api_base_url": fake.base_url},
        tenants={"alice": {"telegram_ids": [ALICE]}, "bob": {"telegram_ids": [BOB]}},
        limits={"max_reply_chars": 100_000},  # above WORST: this test is about rendering
    )
    backend = TwoChats()
    async with running(settings, fake, backend, FAST):
        fake.push_text(ALICE, "write a lot")
        await asyncio.wait_for(backend.alice_streamed.wait(), HANG_S)
        await fake.wait_until(lambda: bool(fake.sent_to(ALICE)))  # drafts are showing
        fake.push_text(BOB, "bob here")
        await fake.wait_until(lambda: any(m.text == "hello bob" for m in fake.sent_to(BOB)))
        backend.bob_answered.set()
        await fake.wait_until(lambda: len(fake.sent_to(ALICE)) >= 10 and _final(fake))
    texts = [m.text for m in fake.sent_to(ALICE)]
    assert "".join(texts).replace(" ", "") == WORST.replace(" ", "")


def _final(fake: FakeBotAPI) -> bool:
    texts = [m.text for m in fake.sent_to(ALICE)]
    return not texts[-1].endswith("…")
