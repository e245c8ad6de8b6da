"""The plain-text case of `render` (no markdown-it) equals the parser's rendering.

Differential: every text below goes through `render` and through `parsed` (the
markdown-it path, which `render` used for every text before) and both must be
equal, whether or not the text takes the plain case. The texts: every line and
paragraph of the answer corpus (tests/telegram/corpus), CommonMark's own
tricky shapes (list markers, ATX/setext headings, indented code, escapes,
entity references, autolinks, hard breaks, NUL), scripts other than Latin
(Cyrillic, Greek, CJK, Arabic, emoji with joiners, combining marks), Unicode
spaces and separators, and 8,000 seeded random strings over an alphabet of
all of these.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from bridge.channels.common import render as render_module
from bridge.channels.common.render import Rendered, parsed, render

CORPUS = sorted((Path(__file__).parent / "corpus").glob("*.md"))

SHAPES = [
    "Hello, how can I help you today?",
    "pong: ping 12",
    "Sure. I'll do that (tomorrow, 9:00)!",
    "See https://example.com/a-b/c?d=1 for details.",
    "See https://example.com/a_b_c_ for details.",
    "Visit www.example.com or mail me@example.com",
    "1. first",
    "1) first",
    "a. first",
    "- item",
    "+ item",
    "* item",
    "# heading",
    "Heading\n=======",
    "Heading\n---",
    "    indented code",
    "\tTabbed",
    "text\twith tab",
    "a  \nb",
    "trailing spaces   ",
    "   leading spaces",
    "back\\slash",
    "AT&T &amp; &copy; &#35;",
    "an <b>html</b> tag",
    "auto <https://example.com>",
    "a | table | row",
    "~~struck~~ and ~single~",
    "*em* _em_ **strong** __strong__",
    "`code` and ``more``",
    "[link](https://x.y) ![img](https://x.y/i.png)",
    "nul \x00 inside",
    "line\u2028separator",
    "para\u2029separator",
    "nbsp\u00a0inside and at end\u00a0",
    "ideographic\u3000space",
    "zero\u200bwidth",
    "crlf\r\nline",
    "cr\ronly",
    "form\x0cfeed",
    "Привет, как дела?",
    "Γειά σου κόσμε",
    "你好，世界。",
    "مرحبا بالعالم",
    "family 👨\u200d👩\u200d👧 emoji 🎉",
    "e\u0301 combining",
    "Ünïcödé 1. not a list",
    "ok!",
    "ok!!!",
    "ok?!",
    "x",
    "",
    " ",
    "A" * 5000,
]

ALPHABET = (
    "abcXYZ019 .,;:?!'\"()-/%@=+$^{}\\`*_[]<>&#|~\n\r\t\x00éßЖж中🎉\u0301\u00a0\u2028\u200b\u3000"
)


def corpus_texts() -> list[str]:
    out: list[str] = []
    for path in CORPUS:
        text = path.read_text("utf-8")
        out.append(text)
        out.extend(text.split("\n"))
        out.extend(text.split("\n\n"))
    return out


def random_texts(count: int = 8_000) -> list[str]:
    rng = random.Random(26)
    plain = "abcdefXYZ 0123456789.,;:?!'\"()-/%@=+$"
    out = []
    for n in range(count):
        pool = plain if n % 2 else ALPHABET  # half from the plain alphabet: the fast case
        out.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 40))))
    return out


def test_the_corpus_has_answers() -> None:
    assert len(CORPUS) >= 5


@pytest.mark.parametrize("source", ["shapes", "corpus", "random"])
def test_render_equals_the_parser(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = {"shapes": SHAPES, "corpus": corpus_texts(), "random": random_texts()}[source]
    through: list[str] = []

    def counted(markdown: str) -> Rendered:
        through.append(markdown)
        return parsed(markdown)

    monkeypatch.setattr(render_module, "parsed", counted)
    for text in texts:
        assert render(text) == parsed(text), repr(text)
    plain = len(texts) - len(through)
    assert 0 < plain < len(texts)  # both cases were exercised


def test_a_plain_answer_is_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(markdown: str) -> object:
        raise AssertionError(f"parsed: {markdown!r}")

    monkeypatch.setattr(render_module, "parsed", refuse)
    for text in ("Hello, how can I help you today?", "pong: ping 12", "Привет!"):
        assert render(text).text == text
        assert render(text).entities == ()
    with pytest.raises(AssertionError):
        render("*bold*")
