"""An answer that breaks mid-stream ends with a visible notice, not a cut-off "…".

The real OpenAI backend streams from the fake OpenAI server, which drops the
connection after some words; the person sees the words that arrived, then
"⚠️ the answer stopped: <reason>" in the same message - never a draft left
hanging with its cursor, never the words silently replaced.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from bridge.channels.telegram.stream import CURSOR
from bridge.llm.openai import OpenAIBackend
from tests.fakes.fake_openai import FakeOpenAI, Text
from tests.telegram.conftest import ALICE, FAST, running, tg_settings
from tests.telegram.fake_bot_api import FakeBotAPI

WORDS = " ".join(f"word{i}" for i in range(60))


async def _nothing(_: float) -> None:
    return None


async def test_a_stream_that_breaks_ends_with_a_notice(home: Path, fake: FakeBotAPI) -> None:
    async with FakeOpenAI(models=["m"]) as model:
        model.chunk_delay_s = 0.02  # slow enough that drafts show the first words
        model.script(Text(WORDS, cut_after=30))
        backend = OpenAIBackend(model.base_url, None, "m", max_retries=0, sleep=_nothing)
        try:
            async with running(tg_settings(home, fake), fake, backend, FAST):
                fake.push_text(ALICE, "tell me a lot")
                await fake.wait_until(
                    lambda: any("the answer stopped" in m.text for m in fake.sent_to(ALICE))
                )
                await asyncio.sleep(0)
                shown = [m for m in fake.sent_to(ALICE) if not m.deleted]
        finally:
            await backend.aclose()
    assert len(shown) == 1, [m.text for m in shown]
    text = shown[0].text
    assert text.startswith("word0 word1 word2"), text  # what arrived is kept
    assert not text.endswith(CURSOR)
    last = text.rsplit("\n", 1)[-1]
    assert last.startswith("⚠️ the answer stopped: "), text
    assert shown[0].edits >= 1  # the draft was finished in place


async def test_an_answer_cancelled_at_shutdown_ends_with_a_notice(
    home: Path, fake: FakeBotAPI
) -> None:
    async with FakeOpenAI(models=["m"]) as model:
        model.chunk_delay_s = 0.05  # a long, slow answer: still streaming at shutdown
        model.script(Text(WORDS * 5))
        backend = OpenAIBackend(model.base_url, None, "m", max_retries=0, sleep=_nothing)
        try:
            async with running(tg_settings(home, fake), fake, backend, FAST) as t:
                fake.push_text(ALICE, "tell me a lot")
                await fake.wait_until(lambda: any("word3" in m.text for m in fake.sent_to(ALICE)))
                assert await t.roost.core.drain(0) == 1  # the daemon stops: the turn is cancelled
                shown = [m for m in fake.sent_to(ALICE) if not m.deleted]
        finally:
            await backend.aclose()
    text = shown[-1].text
    assert text.startswith("word0 word1") and not text.endswith(CURSOR), text
    assert text.endswith("⚠️ the answer stopped: roost was stopped before the answer was complete")
