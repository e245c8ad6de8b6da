"""Two fake OpenAI servers (the default model and `smart`) and a roost built over them."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from bridge.app.build import Roost, build
from bridge.core.config import load_settings
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import Final, Inbound
from tests.conftest import Clock
from tests.fakes.fake_openai import FakeOpenAI

KEY_A = "sk-test-default-0000000000"
KEY_B = "sk-test-smart-1111111111111"
ALICE, BOB = 111111, 222222


@pytest.fixture
async def first() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key=KEY_A, models=["small-1"]) as server:
        yield server


@pytest.fixture
async def second() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key=KEY_B, models=["big-2"]) as server:
        yield server


def models_toml(first: FakeOpenAI, second: FakeOpenAI | None, extra: str = "") -> str:
    """[llm] on `first` (model small-1), [models.smart] on `second` (big-2), two tenants."""
    text = (
        f'[llm]\nbase_url = "{first.base_url}"\napi_key = "{KEY_A}"\nmodel = "small-1"\n'
        f"[tenants.alice]\ntelegram_ids = [{ALICE}]\n[tenants.bob]\ntelegram_ids = [{BOB}]\n"
    )
    if second is not None:
        text += (
            f'[models.smart]\nbase_url = "{second.base_url}"\napi_key = "{KEY_B}"\n'
            'model = "big-2"\n'
        )
    return text + extra


def write_config(text: str) -> None:
    Path(os.environ["ROOST_CONFIG"]).write_text(text)


Make = Callable[[str], Awaitable[Roost]]


@pytest.fixture
async def make(home: Path, clock: Clock) -> AsyncIterator[Make]:
    """Build a roost (MemoryAudit, the test clock) from a TOML text."""
    made: list[Roost] = []

    async def factory(toml: str) -> Roost:
        write_config(toml)
        roost = await build(load_settings(), audit=MemoryAudit(), clock=clock)
        made.append(roost)
        return roost

    yield factory
    for roost in made:
        await roost.aclose()


class Chat:
    """Messages from one person in one chat, numbered."""

    n = 0

    def __init__(self, roost: Roost, channel: str, identity: str, chat: str) -> None:
        self.roost, self.channel, self.identity, self.chat = roost, channel, identity, chat

    async def say(self, text: str) -> Final:
        Chat.n += 1
        inbound = Inbound(self.channel, self.identity, self.chat, text, str(Chat.n))
        return await self.roost.core.handle(inbound)


def web(roost: Roost, chat: str = "c1") -> Chat:
    return Chat(roost, "web", "local", chat)


def telegram(roost: Roost, user: int) -> Chat:
    return Chat(roost, "telegram", str(user), str(user))
