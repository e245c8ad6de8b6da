"""Markdown to WhatsApp's formatting, split at 4096 (`render.chunks`), property-style.

The marks are those of WhatsApp's "Format text" help (*bold*, _italic_,
~strikethrough~, `inline code`, ```monospace```, "> " quotes); what it
cannot show (links with text, headings, tables) is written so it still
reads. For any input: every message is at most 4096 UTF-16 units, no word
is cut when a space is near, no emoji sequence or surrogate pair is cut,
every marker pair is closed within its line, and no text is lost.
"""

from __future__ import annotations

import random
import re

import pytest

from bridge.channels.common.text import utf16_len
from bridge.channels.whatsapp.render import LIMIT, chunks

CASES = [
    ("**Bold** and *it* and ~~gone~~", "*Bold* and _it_ and ~gone~"),
    ("use `pip install roost`", "use `pip install roost`"),
    ("```python\nprint(1)\nx = 2\n```", "```print(1)\nx = 2```"),
    ("# Title\n\nbody", "*Title*\n\nbody"),
    ("see [the docs](https://example.org/docs)", "see the docs (https://example.org/docs)"),
    ("<https://example.org>", "https://example.org"),
    ("mail [me](mailto:a@b.org)", "mail me (a@b.org)"),
    ("> quoted\n> more **b**", "> quoted\n> more *b*"),
    ("- one\n- **two**", "• one\n• *two*"),
    ("1. a\n2. b", "1. a\n2. b"),
    ("***both***", "*_both_*"),
    ("mid**word**bold", "midwordbold"),  # WhatsApp reads no marks inside a word: left plain
    ("snake_case_name and a_b", "snake_case_name and a_b"),
    ("**bold over\ntwo lines**", "*bold over*\n*two lines*"),
    ("** not bold **", "** not bold **"),
    ("<b>html</b> stays text", "<b>html</b> stays text"),
    ("a https://x.org/a_b_c link", "a https://x.org/a_b_c link"),
    ("| a | b |\n|---|---|\n| 1 | 2 |", "```a │ b\n──┼──\n1 │ 2```"),
]


@pytest.mark.parametrize(("markdown", "expected"), CASES)
def test_markdown_becomes_whatsapp_formatting(markdown: str, expected: str) -> None:
    assert chunks(markdown) == [expected]


GLUE = ("\u200d", "\ufe0f", "\u20e3", *(chr(c) for c in range(0x1F3FB, 0x1F400)))  # never first
EMOJI = ["👍🏽", "👨‍👩‍👧‍👦", "🇩🇪", "1️⃣", "🏳️‍🌈", "é", "𝔘"]
WORDS = ["roost", "tea", "Grüße", "naïve", "**bold**", "_it_", "`x`", "~~s~~", "[l](https://e.org)"]


def corpus(seed: int) -> str:
    rng = random.Random(seed)
    parts: list[str] = []
    for _ in range(rng.randrange(200, 2500)):
        roll = rng.random()
        if roll < 0.1:
            parts.append(rng.choice(EMOJI))
        elif roll < 0.13:
            parts.append("\n\n" if rng.random() < 0.5 else "\n")
        elif roll < 0.15:
            parts.append("```\n" + "code line\n" * rng.randrange(1, 40) + "```\n")
        else:
            parts.append(rng.choice(WORDS))
        parts.append(" ")
    return "".join(parts)


def _plain(text: str) -> str:
    text = re.sub(r"```|[*_~`]|^> ", "", text, flags=re.M)
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("seed", range(16))
def test_any_answer_splits_into_whole_messages(seed: int) -> None:
    markdown = corpus(seed)
    messages = chunks(markdown)
    assert messages
    for message in messages:
        assert utf16_len(message) <= LIMIT
        assert message == message.strip()
        for ch in GLUE:
            assert not message.startswith(ch), "a piece starts inside an emoji sequence"
        assert not message.endswith("\u200d")
        assert all(not 0xD800 <= ord(ch) <= 0xDFFF for ch in message)
        if "```" not in message:
            for line in message.split("\n"):
                assert line.count("*") % 2 == 0 and line.count("~") % 2 == 0, line
    whole = chunks(markdown, 1 << 30)
    assert _plain("".join(messages)) == _plain("".join(whole)), "no text lost at the cuts"


def test_a_long_answer_is_cut_between_words() -> None:
    words = [f"word{n}" for n in range(2000)]
    text = " ".join(words)
    messages = chunks(text)
    fewest = -(-len(text) // LIMIT)
    assert fewest <= len(messages) <= fewest + 1
    assert all(utf16_len(m) <= LIMIT for m in messages)
    assert " ".join(messages).split() == words


def test_an_emoji_run_is_cut_between_emoji() -> None:
    family = "👨‍👩‍👧‍👦"
    messages = chunks(family * 1000)
    assert len(messages) > 1
    assert all(m == family * (len(m) // len(family)) for m in messages)
    assert "".join(messages) == family * 1000


def test_markers_count_against_the_limit() -> None:
    messages = chunks(" ".join(["**b**"] * 3000))
    assert all(utf16_len(m) <= LIMIT for m in messages)
    assert sum(m.count("*b*") for m in messages) == 3000


def test_nothing_to_say_is_no_message() -> None:
    assert chunks("") == [] and chunks("  \n\n ") == []
