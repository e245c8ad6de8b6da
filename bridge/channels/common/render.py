"""Markdown -> Telegram text + entities (a pure function, no telegram import).

Models answer in Markdown; Telegram wants plain text plus a list of
entities whose offsets and lengths count UTF-16 code units. Sending text +
entities (never `parse_mode`) means there is nothing to escape, so a model
answer can never trigger "can't parse entities" through bad escaping.

The Markdown is parsed by markdown-it-py (CommonMark, plus its table and
strikethrough rules; raw HTML off, so tags stay text) into a syntax tree,
and the tree is written out here: paragraphs and headings (bold), quotes
(a `blockquote` entity), fenced and indented code (`pre`, with the fence's
language), lists (bullets or numbers, nested lists indented), tables (an
aligned monospace `pre`, `bridge.channels.common.table`), rules; inline
markup in `bridge.channels.common.inline`. An unclosed fence runs to the
end, as CommonMark says, so a half-streamed answer renders. Blocks are
separated as in the source: a blank line where the model left one, else a
line break. The entities are then made legal for Telegram
(`bridge.channels.common.entities.legal`). markdown-it-py is linear on
hostile input (measured: about 9 µs per character on the worst shapes of
tests/telegram/test_render_worst_case.py) and caps nesting at 20 levels.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

from bridge.channels.common.entities import Builder, Entity, Rendered, legal, trim, utf16_len
from bridge.channels.common.inline import bare_urls, inline, plain
from bridge.channels.common.table import table_text

__all__ = ["RULE_TEXT", "Entity", "Rendered", "render", "utf16_len"]

RULE_TEXT = "──────────"
BULLETS = ("•", "◦", "▪")
# markdown-it drops what lies deeper than this (lists in quotes in lists...); a text
# that deep is shown as it was written instead
MAX_NESTING = 32
_LANGUAGE = re.compile(r"[A-Za-z0-9_+#.-]{1,32}")


def _parser() -> MarkdownIt:
    options = {"html": False, "maxNesting": MAX_NESTING}
    md = MarkdownIt("commonmark", options).enable(["table", "strikethrough"])
    # every address parses as a link, as written; telegram_inline decides which
    # become clickable (and normalizes those)
    md.validateLink = lambda url: True  # type: ignore[method-assign]
    md.normalizeLink = lambda url: url  # type: ignore[method-assign]
    md.inline.ruler.before("linkify", "bare_urls", bare_urls)
    return md


_MD = _parser()


# A line that starts with a letter and holds none of these (nor a line break, tab or
# other unprintable character) is one paragraph of text that Markdown leaves as it is:
# no emphasis, code, link, escape, entity reference, HTML, table, quote or list marker
# can start in it. It renders to itself, stripped, with no entities (a short answer's
# common case, without building markdown-it's tokens; tests/telegram/test_render_plain.py
# checks it against the parser).
_MARKUP = frozenset("\\`*_[]<>&#|~")


def render(markdown: str) -> Rendered:
    """Render Markdown to text + entities; leading/trailing whitespace is trimmed."""
    if markdown[:1].isalpha() and markdown.isprintable() and _MARKUP.isdisjoint(markdown):
        return Rendered(markdown.strip())
    return parsed(markdown)


def parsed(markdown: str) -> Rendered:
    """`render` through markdown-it, whatever the text (what the plain case must equal)."""
    source = markdown.replace("\r\n", "\n")
    tokens = _MD.parse(source)
    if any(token.level >= MAX_NESTING - 1 for token in tokens):
        return trim(source, [])
    tree = SyntaxTreeNode(tokens)
    out = _Writer(source.split("\n"))
    out.blocks(tree.children)
    return trim(out.text, legal(out.entities))


class _Writer(Builder):
    """Writes block nodes; knows the source lines to keep its blank lines."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self._lines = lines
        self._bullets = 0  # bullet-list nesting: •, then ◦, then ▪

    def blocks(self, nodes: list[SyntaxTreeNode]) -> None:
        for k, node in enumerate(nodes):
            if k:
                self.newline(blank=self._blank_before(node))
            self.block(node)

    def _blank_before(self, node: SyntaxTreeNode) -> bool:
        line = (node.map[0] if node.map else 0) - 1
        return 0 <= line < len(self._lines) and not self._lines[line].strip(" \t>")

    def block(self, node: SyntaxTreeNode) -> None:
        kind = node.type
        start = self.pos
        if kind == "paragraph":
            self._inlines(node)
        elif kind == "heading":
            self._inlines(node)
            self.wrap("bold", start)
        elif kind == "blockquote":
            self.blocks(node.children)
            self.wrap("blockquote", start)
        elif kind in ("bullet_list", "ordered_list"):
            self._list(node)
        elif kind in ("fence", "code_block"):
            self.add(node.content.rstrip("\n"))
            self.wrap("pre", start, language=_language(node.info) if kind == "fence" else None)
        elif kind == "hr":
            self.add(RULE_TEXT)
        elif kind == "table":
            self.add(_table(node))
            self.wrap("pre", start)
        else:  # html_block and kinds a later markdown-it adds: their text, never lost
            self.add(node.content.rstrip("\n"))
            self.blocks(node.children)

    def _inlines(self, node: SyntaxTreeNode) -> None:
        for child in node.children:
            inline(self, child)

    def _list(self, node: SyntaxTreeNode) -> None:
        ordered = node.type == "ordered_list"
        first = _int(node.attrs.get("start", 1)) if ordered else 0
        outer = self.indent
        bullet = BULLETS[self._bullets % len(BULLETS)]
        self._bullets += 0 if ordered else 1
        for k, item in enumerate(node.children):
            if k:
                self.newline(blank=self._blank_before(item))
            marker = f"{first + k}." if ordered else bullet
            self.add(marker + " ")
            self.indent = outer + " " * (len(marker) + 1)
            self.blocks(item.children)
            self.indent = outer
        self._bullets -= 0 if ordered else 1


def _int(value: object) -> int:
    return value if isinstance(value, int) else int(str(value))


def _language(info: str) -> str | None:
    word = info.strip().split(maxsplit=1)[0] if info.strip() else ""
    return word if _LANGUAGE.fullmatch(word) else None


def _table(node: SyntaxTreeNode) -> str:
    rows: list[list[str]] = []
    aligns: list[str] = []
    header = False
    for section in node.children:  # thead, tbody
        for tr in section.children:
            cells = tr.children
            rows.append([plain(cell.children[0]) if cell.children else "" for cell in cells])
            if section.type == "thead":
                header = True
                aligns = [_align(cell.attrs.get("style")) for cell in cells]
    return table_text(rows, aligns, header)


def _align(style: object) -> str:
    text = str(style or "")
    return text.removeprefix("text-align:") if text.startswith("text-align:") else ""
