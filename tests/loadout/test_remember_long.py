"""`/remember` with long text: the index line is cut after normalisation, never refused."""

from __future__ import annotations

from typing import Any

import pytest

from bridge.core.config import Settings
from bridge.memory.commands import remember_description, remember_name
from bridge.memory.files import MAX_DESCRIPTION
from bridge.screening.unicode_clean import clean
from tests.loadout.conftest import inbound

LONG_TEXTS = [
    # plain prose well past the index line's limit
    "I keep my bike in the shed behind the house and the key is on the hook by the door, "
    "except on Fridays when my sister borrows it to ride to the market in town.",
    # "…" in the text itself: NFKC turns each into "..." (three characters)
    "…" * 149 + "end",
    # one code point that NFKC expands to 18 (U+FDFA), placed right at the cut
    "a" * 140 + "\ufdfa" * 3 + " and more words after it to pass the limit",
    # full-width letters and ligatures (NFKC changes them, same or more length)
    "ﬁ" * 90 + "ＡＢＣ" * 30,
    # a squared unit (U+3392 -> "MHz") repeated
    "\u3392 " * 120,
    # no-break and ideographic spaces (plain spaces once normalised)
    "word\u00a0" * 40 + "\u3000tail" * 10,
    # a script with no ASCII letters (the file name cannot be made from its words)
    "我喜欢在早上喝绿茶，下午喝红茶，晚上不喝茶。" * 8,
]


@pytest.mark.parametrize("text", LONG_TEXTS)
def test_description_fits_after_the_store_normalises_it(text: str) -> None:
    desc = remember_description(text)
    assert 1 <= len(desc) <= MAX_DESCRIPTION
    assert clean(desc) == desc  # what the store will keep is what was measured
    assert "\n" not in desc and desc.endswith("...")


def test_short_text_is_kept_whole() -> None:
    assert remember_description("  likes  tea \n\n with milk ") == "likes tea with milk"


def test_name_is_cut_after_normalising() -> None:
    assert len(remember_name("ﬁ" * 90)) <= 40
    assert remember_name("我喜欢绿茶") == "note"
    assert remember_name("I prefer short answers") == "I prefer short answers"


@pytest.mark.parametrize("text", LONG_TEXTS)
async def test_remember_saves_long_text_whole(
    text: str, settings: Settings, make_roost: Any
) -> None:
    roost = await make_roost(settings)
    reply = (await roost.core.handle(inbound(f"/remember {text}"))).text
    assert reply.startswith("Remembered as"), reply
    topics = roost.loadout.memory.store.topics(roost.tenant_dirs("local"))
    assert len(topics) == 1
    assert topics[0].content.strip() == clean(text).strip()
