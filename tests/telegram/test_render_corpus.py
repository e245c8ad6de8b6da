"""Model answers (tests/telegram/corpus/*.md) render into entities Telegram accepts.

Each answer is rendered whole, as every streamed prefix (drafts, with
unclosed fences and half-written markup), and after splitting; every
rendering must pass `entity_rules.problem` (bounds, code points, Telegram's
nesting rules) and keep its text. Then what a reader sees: tables as
aligned monospace blocks, nested lists indented with numbers and bullets,
headings bold, images as links, HTML as text, only safe links clickable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bridge.channels.common.render import Rendered, render, utf16_len
from bridge.channels.common.split import split
from bridge.channels.telegram.stream import draft_layout, layout
from tests.telegram.entity_rules import problem

CORPUS = sorted((Path(__file__).parent / "corpus").glob("*.md"))


def as_dicts(r: Rendered) -> list[dict[str, Any]]:
    return [
        {"type": e.type, "offset": e.offset, "length": e.length, "url": e.url} for e in r.entities
    ]


def covered(r: Rendered, kind: str) -> list[str]:
    raw = r.text.encode("utf-16-le")
    return [
        raw[e.offset * 2 : (e.offset + e.length) * 2].decode("utf-16-le")
        for e in r.entities
        if e.type == kind
    ]


def assert_valid(r: Rendered) -> None:
    assert problem(r.text, as_dicts(r)) is None, problem(r.text, as_dicts(r))


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_every_answer_and_every_streamed_prefix_is_valid(path: Path) -> None:
    markdown = path.read_text(encoding="utf-8")
    whole = render(markdown)
    assert_valid(whole)
    for chunk in split(whole, 500):
        assert_valid(chunk)
        assert utf16_len(chunk.text) <= 500
    cuts = sorted({*range(1, len(markdown), 23), *(i for i, c in enumerate(markdown) if c == "\n")})
    for cut in cuts:
        for chunk in draft_layout(markdown[:cut]):
            assert_valid(chunk)


def test_a_long_answer_splits_into_valid_messages() -> None:
    markdown = "\n\n".join(p.read_text(encoding="utf-8") for p in CORPUS * 3)
    chunks = layout(markdown)
    assert len(chunks) > 3
    for chunk in chunks:
        assert 0 < utf16_len(chunk.text) <= 4096
        assert_valid(chunk)


def test_a_table_is_an_aligned_monospace_block() -> None:
    wcwidth = pytest.importorskip("wcwidth")  # the reference for display width
    r = render((Path(__file__).parent / "corpus" / "i18n.md").read_text(encoding="utf-8"))
    (table,) = [t for t in covered(r, "pre") if "北京" in t]
    lines = table.split("\n")
    assert lines[0].split("│")[0].strip() == "城市"
    assert set(lines[1]) <= {"─", "┼"}
    # every row's separators sit in the same display columns
    for line in lines:
        if "│" in line:
            cols = [wcwidth.wcswidth(line[:i]) for i, c in enumerate(line) if c == "│"]
            head = [wcwidth.wcswidth(lines[0][:i]) for i, c in enumerate(lines[0]) if c == "│"]
            assert cols == head, line
    assert lines[2].split("│")[1].strip() == "2189"
    assert lines[2].split("│")[1].endswith("2189 ")  # right-aligned column


def test_cells_keep_their_text_but_not_their_markup() -> None:
    r = render("| a | b |\n|---|---|\n| **x** `y` | [l](https://e.org) |")
    assert r.text.splitlines()[2] == "x y │ l"
    assert [e.type for e in r.entities] == ["pre"]


def test_nested_lists_are_numbered_and_indented() -> None:
    r = render((Path(__file__).parent / "corpus" / "nested.md").read_text(encoding="utf-8"))
    lines = r.text.splitlines()
    assert "1. Preparation" in lines
    assert "   1. Back up the database:" in lines
    assert "   2. Freeze deployments." in lines
    assert "      • Tell the team in #deploys" in lines
    assert "        ◦ on staging" in lines
    # CommonMark: "10." after "3." continues the same list, numbered on
    assert "4. A list item with a big number" in lines
    assert "5. and the next one" in lines
    assert "pg_dump -Fc mydb > mydb.dump" in covered(r, "pre")
    assert "Preparation" in covered(r, "bold")


def test_headings_bold_images_links_and_html_as_text() -> None:
    r = render((Path(__file__).parent / "corpus" / "wiki_links.md").read_text(encoding="utf-8"))
    links = {e.url for e in r.entities if e.type == "text_link"}
    assert "https://en.wikipedia.org/wiki/Lisp_(programming_language)" in links
    assert "https://upload.wikimedia.org/wikipedia/commons/1/1b/Cons-cells.svg" in links
    assert "mailto:team@example.org" in links and "tg://resolve?domain=telegram" in links
    assert not any(u.startswith(("javascript", "file")) for u in links)
    assert "click me (javascript:alert(1))" in r.text
    assert "diagram of a cons cell" in covered(r, "text_link")
    assert "https://example.com/search?q=a*b*c" in r.text  # a bare URL keeps its stars
    assert "my_var_name, init and snake_case_everywhere" in r.text  # CommonMark: __x__ is bold
    q = render((Path(__file__).parent / "corpus" / "quotes_rules.md").read_text(encoding="utf-8"))
    assert '<script>alert("x")</script>' in q.text
    assert "<details><summary>Click</summary>hidden</details> & © 😀" in q.text
    assert {"Setext heading", "Another one"} <= set(covered(q, "bold"))
    assert "a code block inside a quote" in covered(q, "pre")


def test_an_unclosed_fence_while_streaming_is_a_code_block() -> None:
    text = (Path(__file__).parent / "corpus" / "streaming_unclosed.md").read_text()
    r = render(text)
    (code,) = covered(r, "pre")
    assert code.startswith("fn main() {") and "**not bold**" in code
    assert r.entities[-1].language == "rust"


@pytest.mark.parametrize(
    "markdown",
    [
        "# Title `code` end",  # bold is cut around the code span
        "**bold `code` bold**",
        "[link `code`](https://e.org)",  # the code span inside a link is dropped
        "> quote\n> ```\n> code\n> ```",  # the quote is cut around the code block
        "> > nested quote",
        "[![img](https://e.org/i.png)](https://e.org)",  # an image in a link is its alt text
    ],
)
def test_telegram_nesting_rules_hold(markdown: str) -> None:
    assert_valid(render(markdown))
