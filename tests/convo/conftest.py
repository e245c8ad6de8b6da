"""A roost wired to the fake OpenAI server over HTTP, with a small session budget
and one tool (`numbers`) the model can call; real SQLite, real audit chain file."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from bridge.app.build import Roost, build
from bridge.core.compaction import SUMMARY_SYSTEM
from bridge.core.config import load_settings
from bridge.types.backend import ToolSchema
from bridge.types.messages import Inbound
from bridge.types.tools import FunctionTool, Tool, TurnContext
from tests.fakes.fake_openai import FakeOpenAI

API_KEY = "sk-test-key-000000000000"
SUMMARY_MARK = SUMMARY_SYSTEM.split(".")[0]  # "You condense the earlier part of a conversation"


async def _numbers(args: Mapping[str, Any], turn: TurnContext) -> str:
    count = int(args.get("count", 3))
    return ", ".join(str(17 + 25 * i + i * i) for i in range(count))  # 17, 43, 71, ...


NUMBERS = FunctionTool(
    ToolSchema(
        "numbers",
        "Return some numbers.",
        {"type": "object", "properties": {"count": {"type": "integer"}}},
    ),
    _numbers,
)


class NumbersSource:
    def tools_for(self, turn: TurnContext) -> list[Tool]:
        return [NUMBERS]


def msg(text: str, n: int, chat: str = "c1", quoted: str = "") -> Inbound:
    """A web message from the local person (message ids as the web channel makes them)."""
    return Inbound("web", "local", chat, text, f"{n:032x}", quoted=quoted)


def is_summary_request(body: Mapping[str, Any]) -> bool:
    messages = body.get("messages") or []
    return bool(messages) and SUMMARY_MARK in str(messages[0].get("content"))


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key=API_KEY, models=["m1"]) as server:
        yield server


@pytest.fixture
def budget() -> int:
    return 1000  # the smallest session budget the configuration allows


@pytest.fixture
async def wired(
    home: Path, fake: FakeOpenAI, budget: int, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Roost]:
    monkeypatch.setenv("ROOST_LLM__BASE_URL", fake.base_url)
    monkeypatch.setenv("ROOST_LLM__API_KEY", API_KEY)
    monkeypatch.setenv("ROOST_LLM__MODEL", "m1")
    monkeypatch.setenv("ROOST_LLM__MAX_RETRIES", "0")
    monkeypatch.setenv("ROOST_LIMITS__SESSION_CHARS", str(budget))
    made = await build(load_settings(), tool_sources=(NumbersSource(),))
    yield made
    await made.aclose()
