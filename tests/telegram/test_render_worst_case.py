"""Render and split stay linear on the worst Markdown a model can write.

Documents of 20k-100k characters in hostile shapes (unclosed `[` runs, `](` chains, code
ticks inside emphasis, heading lines of spaces, nested brackets, fences,
quotes) and seeded random soups of metacharacters: the output must keep its
invariants (entities inside the text and on code-point boundaries, chunks of
at most 4096 UTF-16 units, no text lost). Linearity holds by construction
(see the docstring of telegram_render); the quadratic renderer needed about
40-110 s for one document of 100k, the linear one well under a second.
"""

from __future__ import annotations

import random
import re

import pytest

from bridge.channels.common.render import RULE_TEXT, Rendered, render, utf16_len
from bridge.channels.common.split import LIMIT, split

# what the renderer adds: list markers at a line start, a table's borders and cuts
DECORATION = re.compile(r"(?m)^[ \t]*(?:(?:\d+\.|[•◦▪]) )+|[│─┼…]")
META = ["[", "](", "]", "(", ")", "*", "**", "_", "__", "~~", "`", "```", "> ", "# ", "\\", "<"]
WORDS = ["a", "b", "word", "x_y", "😀", "https://e.org/a", " ", "  ", "\n", "\t", "\u00a0", '"']


def shapes(n: int) -> dict[str, str]:
    """Hand-made worst shapes, each about n characters."""

    def rep(unit: str) -> str:
        return unit * (n // len(unit))

    return {
        "open brackets": rep("["),
        "open links": rep("[a"),
        "link heads": rep("[a]("),
        "link urls": rep("[a](b"),
        "angle urls": rep("[a](<"),
        "titles": rep('[a](b "'),
        "nested brackets": "[" * (n // 2) + "]" * (n // 2),
        "heading of spaces": "# a" + " " * n + "b",
        "heading of hashes": "# a" + " #" * (n // 2) + "b",
        "rule lookalike": rep("- ") + "x",
        "quoted brackets": rep("> [\n"),
        "quote one line": "> " + rep("[a]("),
        "ticks in emphasis": "*a " + rep("`x "),
        "star tick bracket": rep("*[`"),
        "emphasis soup": rep("**a *"),
        "underscores": rep("_a _"),
        "strike": rep("~~a ~"),
        "fences": rep("```\n"),
        "escapes": rep("\\*["),
        "bullets": rep("- [\n"),
        "schemes": rep("a https:"),
        "bare urls": rep("https://e.org/*a_"),
        "tables": "|a|b|\n|-|-|\n" + rep("|[x](|`y|\n"),
        "deep lists": rep("  - 1. > "),
    }


def soup(seed: int, n: int) -> str:
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    while size < n:
        piece = rng.choice(META) if rng.random() < 0.6 else rng.choice(WORDS)
        if rng.random() < 0.02:  # a long run of one metacharacter
            piece *= rng.randint(50, 2000)
        parts.append(piece)
        size += len(piece)
    return "".join(parts)


def check(markdown: str) -> None:
    rendered = render(markdown)
    text = rendered.text
    units = utf16_len(text)
    starts = _starts(text)
    for e in rendered.entities:
        assert e.length > 0 and e.offset >= 0 and e.offset + e.length <= units
        assert e.offset in starts and e.offset + e.length in starts
    # nothing is invented: what remains (minus list markers, table borders and rules)
    # is a subsequence of the input
    visible = DECORATION.sub("", text.replace(RULE_TEXT, ""))
    assert _subsequence([c for c in visible if not c.isspace()], markdown)
    chunks = split(rendered)
    joined = "".join(c.text for c in chunks)
    assert _squash(joined) == _squash(text), "splitting lost or added text"
    for chunk in chunks:
        assert 0 < utf16_len(chunk.text) <= LIMIT
        assert chunk.text.strip(), "a chunk Telegram would call empty"
        cs = _starts(chunk.text)
        for e in chunk.entities:
            assert e.offset in cs and e.offset + e.length in cs
            assert e.offset + e.length <= utf16_len(chunk.text)


def _starts(text: str) -> set[int]:
    out, pos = {0}, 0
    for ch in text:
        pos += 2 if ord(ch) > 0xFFFF else 1
        out.add(pos)
    return out


def _squash(text: str) -> str:
    return "".join(c for c in text if not c.isspace())


def _subsequence(needles: list[str], hay: str) -> bool:
    it = iter(hay)
    return all(any(c == h for h in it) for c in needles)


# 20k characters: five Telegram messages, so every shape is also split; the
# invariants do not depend on the size beyond that (one 100k document below
# keeps the long path), and each 100k shape cost about a second of CPU.
@pytest.mark.parametrize("name", sorted(shapes(10)))
def test_worst_shapes_of_20k_characters(name: str) -> None:
    check(shapes(20_000)[name])


@pytest.mark.parametrize("seed", range(6))
def test_seeded_metacharacter_soup_of_20k_characters(seed: int) -> None:
    check(soup(seed, 20_000))


def test_one_soup_of_100k_characters() -> None:
    check(soup(99, 100_000))


def test_the_renderer_is_still_markdown() -> None:
    r = render("[a](https://e.org) *b* `c` # not heading\n# Head #\n[x]( <https://e.org/y> )")
    assert r.text == "a b c # not heading\nHead\nx"
    assert [e.type for e in r.entities] == ["text_link", "italic", "code", "bold", "text_link"]
    assert isinstance(r, Rendered)
