"""A runaway model reply is cut while it streams, at `[limits] max_reply_chars`.

The fake OpenAI server streams a reply far larger than the cap (an unclosed
`[` run, the shape that is costly to render for Telegram); the channel gets at
most the cap plus the visible cut note, the stored answer is the cut one, and
the next turn works as usual.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.app.build import Roost, build
from bridge.core.config import load_settings
from bridge.core.sessions import SessionKey
from tests.conftest import web_msg
from tests.fakes.fake_openai import FakeOpenAI, Text
from tests.personal_tools.conftest import API_KEY

HUGE = "[" * 400_000 + " never shown"
NOTE = "… [reply cut at 5,000 characters]"


@pytest.fixture
async def capped(
    home: Path, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Roost]:
    monkeypatch.setenv("ROOST_LLM__BASE_URL", fake.base_url)
    monkeypatch.setenv("ROOST_LLM__API_KEY", API_KEY)
    monkeypatch.setenv("ROOST_LLM__MODEL", "m1")
    monkeypatch.setenv("ROOST_LIMITS__MAX_REPLY_CHARS", "5000")
    made = await build(load_settings())
    yield made
    await made.aclose()


async def test_a_huge_streamed_reply_is_cut_visibly(capped: Roost, fake: FakeOpenAI) -> None:
    pieces = [HUGE[i : i + 1_000] for i in range(0, len(HUGE), 1_000)]
    fake.script(Text(HUGE, pieces=pieces), Text("short and sweet"))
    sent: list[str] = []

    async def sink(piece: str) -> None:
        sent.append(piece)

    answer = await capped.core.handle(web_msg("talk a lot", 1), sink)
    streamed = "".join(sent)
    assert answer.text == "[" * 5_000 + "\n" + NOTE
    assert streamed == answer.text
    assert "never shown" not in streamed
    history = (await capped.sessions.load(SessionKey("local", "web", "c1"), 0)).history
    assert history[-1].content == answer.text

    again = await capped.core.handle(web_msg("now briefly", 2))
    assert again.text == "short and sweet"


async def test_the_cap_defaults_to_32000(home: Path) -> None:
    assert load_settings().limits.max_reply_chars == 32_000
