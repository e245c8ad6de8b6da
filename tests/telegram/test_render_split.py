"""The pure halves of the output: Markdown -> entities, and splitting."""

from __future__ import annotations

import random

import pytest

from bridge.channels.common.render import Entity, Rendered, render, utf16_len
from bridge.channels.common.split import split
from bridge.channels.telegram.stream import CURSOR, draft_layout


def spans(r: Rendered) -> list[tuple[str, str]]:
    """(type, covered text) for each entity, decoding UTF-16 offsets."""
    raw = r.text.encode("utf-16-le")
    return [
        (e.type, raw[e.offset * 2 : (e.offset + e.length) * 2].decode("utf-16-le"))
        for e in r.entities
    ]


@pytest.mark.parametrize(
    ("markdown", "text", "expected"),
    [
        ("**bold** and __also__", "bold and also", [("bold", "bold"), ("bold", "also")]),
        (
            "*it* _it_ ~~gone~~",
            "it it gone",
            [("italic", "it"), ("italic", "it"), ("strikethrough", "gone")],
        ),
        ("snake_case_name and 2 * 3 * 4", "snake_case_name and 2 * 3 * 4", []),
        ("`a *not* b` done", "a *not* b done", [("code", "a *not* b")]),
        ("see [docs](https://ex.org/a_b) now", "see docs now", [("text_link", "docs")]),
        ("[x](javascript:void) y", "x (javascript:void) y", []),
        ("# Title 🎉", "Title 🎉", [("bold", "Title 🎉")]),
        ("- one\n* two", "• one\n• two", []),
        (
            "> quoted **b**\n> more",
            "quoted b\nmore",
            [("blockquote", "quoted b\nmore"), ("bold", "b")],
        ),
        ("```py\nx = '**'\n```", "x = '**'", [("pre", "x = '**'")]),
        ("unclosed **bold and `tick", "unclosed **bold and `tick", []),
        (r"\*literal\* \_x\_", "*literal* _x_", []),
        ("😀 **x😀y** z", "😀 x😀y z", [("bold", "x😀y")]),
        ("***both***", "both", [("italic", "both"), ("bold", "both")]),
        ("---", "──────────", []),
    ],
)
def test_render(markdown: str, text: str, expected: list[tuple[str, str]]) -> None:
    r = render(markdown)
    assert r.text == text
    assert sorted(spans(r)) == sorted(expected)


def test_pre_keeps_its_language_and_an_unclosed_fence_runs_to_the_end() -> None:
    r = render("intro\n```python\nprint(1)\n")
    assert r.text == "intro\nprint(1)"
    assert r.entities == (Entity("pre", 6, 8, language="python"),)


def test_render_of_a_pathological_line_is_fast_enough_to_finish() -> None:
    r = render("*a " * 20_000 + "_b " * 20_000)
    assert r.entities == ()


def check_chunks(whole: Rendered, chunks: list[Rendered], limit: int) -> None:
    pos = 0
    for chunk in chunks:
        assert 0 < utf16_len(chunk.text) <= limit
        found = whole.text.find(chunk.text, pos)
        assert found >= 0 and not whole.text[pos:found].strip()
        pos = found + len(chunk.text)
        for e in chunk.entities:
            assert e.length > 0 and e.offset + e.length <= utf16_len(chunk.text)
        chunk.text.encode("utf-8")  # no lone surrogate can be encoded
    assert not whole.text[pos:].strip()
    covered_whole = sorted(t for _, t in spans(whole))
    covered_parts = "".join(sorted(t for c in chunks for _, t in spans(c)))
    assert sum(map(len, covered_whole)) >= len(covered_parts.replace("\n", "")) - 1


def test_split_prefers_paragraphs_outside_entities() -> None:
    para = ("word " * 150).strip()
    whole = render(f"{para}\n\n**{para}**\n\n{para}")
    chunks = split(whole, limit=1000)
    check_chunks(whole, chunks, 1000)
    assert [c.text for c in chunks] == [para, para, para]
    assert chunks[1].entities == (Entity("bold", 0, utf16_len(para)),)


def test_split_cuts_a_long_code_block_at_a_line_and_reoffsets_it() -> None:
    code = "\n".join(f"line_{i} = '{'😀' * 5}'" for i in range(200))
    whole = render(f"Intro text.\n\n```python\n{code}\n```")
    chunks = split(whole, limit=1000)
    check_chunks(whole, chunks, 1000)
    assert len(chunks) > 3
    for chunk in chunks[1:]:
        assert chunk.entities[0].type == "pre" and chunk.entities[0].offset == 0
        assert chunk.entities[0].language == "python"
        assert chunk.text.startswith("line_")


def test_split_never_breaks_emoji_sequences() -> None:
    family = "👨‍👩‍👧‍👦"
    flag = "🇩🇪"
    thumbs = "👍🏽"
    text = (family + flag + thumbs) * 400  # no spaces at all: hard cuts only
    whole = Rendered(text)
    for limit in (50, 97, 1000, 4096):
        chunks = split(whole, limit)
        check_chunks(whole, chunks, limit)
        for chunk in chunks:
            assert (
                chunk.text.startswith(family)
                or chunk.text.startswith(flag)
                or chunk.text.startswith(thumbs)
            )
        assert "".join(c.text for c in chunks) == text


@pytest.mark.parametrize("seed", range(25))
def test_split_random_documents(seed: int) -> None:
    rng = random.Random(seed)
    words = ["a", "bb", "😀", "**bold**", "`co de`", "_it_", "[l](https://x.y)", "🇫🇷", "x" * 40]
    lines = []
    for _ in range(rng.randint(20, 300)):
        kind = rng.random()
        if kind < 0.1:
            lines.append(
                "```\n" + "\n".join("c😀de " * rng.randint(1, 30) for _ in range(5)) + "\n```"
            )
        else:
            lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(0, 60))))
    whole = render("\n".join(lines))
    limit = rng.choice([64, 200, 4096])
    check_chunks(whole, split(whole, limit), limit)


def test_draft_layout_marks_the_last_chunk() -> None:
    chunks = draft_layout("**growing** answer")
    assert chunks[-1].text.endswith(CURSOR)
    assert chunks[0].entities == (Entity("bold", 0, 7),)


def test_no_message_carries_more_than_a_hundred_entities() -> None:
    """Telegram silently drops the formatting after a message's 100th entity."""
    markdown = " ".join(f"**w{i}** `c{i}`" for i in range(260))  # 520 entities, 4k characters
    whole = render(markdown)
    chunks = split(whole)
    assert len(chunks) == 6
    assert all(len(c.entities) <= 100 for c in chunks)
    assert sum(len(c.entities) for c in chunks) == len(whole.entities) == 520
    check_chunks(whole, chunks, 4096)
