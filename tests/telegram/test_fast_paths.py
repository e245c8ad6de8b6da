"""The per-message fast paths of the Telegram channel give exactly the slow path's answer.

`without_mention` skips the mention search for a text without "@" (the
pattern's first character) and uses patterns compiled once; `split` tells a
one-message text by its UTF-16 length (`_utf16_units`, a C encode) before
it builds the per-character offsets a cut needs. Each is checked against the
slow form it replaced, on the cases that matter (mentions, case, word
edges, commands, tabs and runs of spaces; astral characters, lone
surrogates, texts at and around the limit) and on seeded random texts.
"""

from __future__ import annotations

import random
import re

import pytest

from bridge.channels.common.render import Entity, Rendered
from bridge.channels.common.split import (
    LIMIT,
    _utf16_offsets,
    _utf16_units,
    split,
    visible,
)
from bridge.channels.telegram.input import without_mention

BOT = "roost_bot"


def slow_without_mention(text: str, username: str) -> str:
    """The form before the fast path (searched every text, compiled per call)."""
    cleaned = re.sub(rf"(?<![/\w])@{re.escape(username)}\b", " ", text, flags=re.IGNORECASE)
    return re.sub(r"[ \t]{2,}", " ", cleaned).strip()


MENTION_CASES = [
    "",
    "ping",
    "  ping  ",
    "a  b\t\tc \t d",
    "@roost_bot what's up",
    "@ROOST_BOT what's up",
    "hey @roost_bot, what's up",
    "hey @roost_botx not me",
    "/start@roost_bot",
    "mail me at a@roost_bot.org",
    "@roost_bot",
    "@roost_bot @roost_bot  twice",
    "no at sign but  runs\tof\t\tspace",
    "@other_bot hello",
    "ünïcödé @roost_bot ☃ 😀",
    "\u00a0 no-break spaces \u00a0",
    "line\n  break\n\n@roost_bot",
]


@pytest.mark.parametrize("text", MENTION_CASES)
@pytest.mark.parametrize("username", [BOT, "Roost_Bot", "a.b"])
def test_without_mention_is_the_slow_form(text: str, username: str) -> None:
    assert without_mention(text, username) == slow_without_mention(text, username)


def test_without_mention_on_random_texts() -> None:
    rng = random.Random(26)
    alphabet = ["@", "roost_bot", "ROOST_BOT", " ", "\t", "\n", "a", "/", "_", "é", "😀", "x"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))
        assert without_mention(text, BOT) == slow_without_mention(text, BOT), repr(text)


UNIT_CASES = [
    "",
    "a",
    "pong: ping 1",
    "é",
    "😀",
    "a😀b",
    "\ud800",  # a lone surrogate: one unit, as the offsets count it
    "x\udfffy",
    "x" * LIMIT,
    "😀" * (LIMIT // 2),
    "😀" * (LIMIT // 2) + "x",
    "日本語" * 2000,
]


@pytest.mark.parametrize("text", UNIT_CASES)
def test_utf16_units_is_the_offsets_total(text: str) -> None:
    assert _utf16_units(text) == _utf16_offsets(text)[-1]


def slow_split_one(rendered: Rendered, limit: int) -> list[Rendered] | None:
    """The one-message answer of `split` as it was decided before (None: it cuts)."""
    if _utf16_offsets(rendered.text)[-1] <= limit and len(rendered.entities) <= 100:
        return [rendered] if visible(rendered.text) else []
    return None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "\u2800",
        "pong",
        "x" * LIMIT,
        "x" * (LIMIT + 1),
        "😀" * (LIMIT // 2),
        "😀" * (LIMIT // 2) + "x",
        "a" * (LIMIT - 1) + "😀",
        "\ud800" * LIMIT,
        "\ud800" * (LIMIT + 1),
    ],
)
def test_split_decides_one_message_as_before(text: str) -> None:
    first = _utf16_units(text[:1])
    rendered = Rendered(text, (Entity("bold", 0, first),) if text.strip() else ())
    before = slow_split_one(rendered, LIMIT)
    after = split(rendered, LIMIT)
    if before is not None:
        assert after == before
    else:
        assert len(after) > 1 or not after or after[0] != rendered


def test_split_on_random_texts_is_one_message_exactly_when_it_fits() -> None:
    rng = random.Random(33)
    pieces = ["a", " ", "😀", "é", "\n", "\ud800", "日"]
    for _ in range(400):
        limit = rng.randrange(8, 40)  # room for the longest emoji sequence
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(30)))
        rendered = Rendered(text)
        before = slow_split_one(rendered, limit)
        after = split(rendered, limit)
        if before is not None:
            assert after == before, repr(text)
        else:
            assert sum(_utf16_units(c.text) for c in after) <= _utf16_units(text)
            assert all(_utf16_units(c.text) <= limit for c in after), repr(text)
