"""A chunk Telegram would call empty is never sent, and one rejected chunk
never aborts the rest of an answer (item 15)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.channels.common.render import Rendered, render
from bridge.channels.common.split import split
from tests.conftest import ScriptedBackend
from tests.telegram.conftest import ALICE, running, tg_settings
from tests.telegram.fake_bot_api import Failure, FakeBotAPI, telegram_strip

BLANKS = [
    "\t",
    "\u00a0",
    "\u2028",
    "\u2029",
    "\u200b",
    "\u200d\u200c",
    "\u3164",
    "\u2800",
    "\ufeff",
    "\u2060",
    "\u180e",
    "\u3000",
    "\u202f",
    "\u200e",
    "\u00ad",
]


@pytest.mark.parametrize("blank", BLANKS)
def test_split_never_yields_a_chunk_telegram_calls_empty(blank: str) -> None:
    for filler in (blank * 5000, (blank + " ") * 3000, ("\n" + blank) * 3000):
        text = "a" * 4000 + "\n\n" + filler + "\n\nb"
        chunks = split(Rendered(text))
        assert chunks and all(telegram_strip(c.text) for c in chunks), blank
        assert chunks[0].text.startswith("a") and chunks[-1].text.endswith("b")
    assert split(render(blank * 10)) == []


@pytest.mark.parametrize("blank", ["\t", "\u00a0", "\u2028", "\u200b", "\u3164"])
async def test_an_answer_with_a_blank_stretch_arrives_whole(
    home: Path, fake: FakeBotAPI, blank: str
) -> None:
    answer = "first " * 700 + "\n\n" + blank * 6000 + "\n\nlast words"
    async with running(tg_settings(home, fake), fake, ScriptedBackend(answer)):
        fake.push_text(ALICE, "go")
        await fake.wait_until(lambda: any("last words" in m.text for m in fake.sent_to(ALICE)))
    texts = [m.text for m in fake.sent_to(ALICE)]
    assert texts[0].startswith("first") and texts[-1].endswith("last words")


async def test_a_rejected_chunk_is_marked_and_the_rest_still_arrives(
    home: Path, fake: FakeBotAPI
) -> None:
    answer = "\n\n".join(f"part{n} " + "x" * 3000 for n in range(3))
    part1 = Failure(400, "Bad Request: message text is empty")
    fake.refuse_text = lambda text: part1 if text.startswith("part1") else None
    async with running(tg_settings(home, fake), fake, ScriptedBackend(answer)) as run:
        fake.push_text(ALICE, "go")
        await run.idle()
    texts = [m.text for m in fake.sent_to(ALICE)]
    assert texts[0].startswith("part0") and texts[-1].startswith("part2")
    assert len(texts) == 3 and "could not be shown" in texts[1]
