"""Inline Markdown (markdown-it-py syntax tree nodes) -> text + entities.

Emphasis becomes italic, strong emphasis bold, `~~x~~` strikethrough, a
code span `code`. A link becomes a `text_link` only when its address is
http(s), tg or mailto; any other address is shown after the text in
parentheses, never made clickable. An image is a link to the picture, its
alt text the link text (a picture inside a link is only its alt text:
links do not nest). Raw HTML is never interpreted: markdown-it runs with
`html` off, so tags stay text. Line breaks inside a paragraph stay line
breaks (models write them on purpose); `plain` gives a node's text without
any entity, for table cells. A bare address (`https://…`) stays plain text
that Telegram links itself: `bare_urls`, a markdown-it inline rule, keeps
its `*`, `_` and `~` from being read as emphasis.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from markdown_it.common.normalize_url import normalizeLink
from markdown_it.rules_inline import StateInline
from markdown_it.tree import SyntaxTreeNode

from bridge.channels.common.entities import Builder

URL_OK = re.compile(r"^(https?://|tg://|mailto:)[^\s]+$", re.IGNORECASE)
_FORMATS = {"em": "italic", "strong": "bold", "s": "strikethrough"}
_SCHEME = re.compile(r"(?:^|[^A-Za-z0-9.+-])(?:https?|ftp|tg)$", re.IGNORECASE)
_URL_TAIL = re.compile(r"://[^\s<>`\[\]]+")
_TAIL_PUNCT = "*_~.,;:!?'\")"


def bare_urls(state: StateInline, silent: bool) -> bool:
    """At the `:` of `https://…` after a scheme: take the rest of the address as
    text (trailing punctuation and emphasis marks left out)."""
    if state.src[state.pos] != ":" or state.linkLevel > 0:
        return False
    if not _SCHEME.search(state.pending[-8:]):  # the tail only: pending can be long
        return False
    match = _URL_TAIL.match(state.src, state.pos, state.posMax)
    if match is None:
        return False
    tail = match.group().rstrip(_TAIL_PUNCT)
    if len(tail) <= 3:
        return False
    if not silent:
        state.pending += tail
    state.pos += len(tail)
    return True


def inline(out: Builder, node: SyntaxTreeNode, in_link: bool = False) -> None:
    """Write the children of an `inline` node (or of a span) to `out`."""
    for child in node.children:
        _one(out, child, in_link)


def _one(out: Builder, node: SyntaxTreeNode, in_link: bool) -> None:
    kind = node.type
    if kind in ("text", "text_special", "html_inline"):
        out.add(node.content)
    elif kind == "softbreak" or kind == "hardbreak":
        out.newline()
    elif kind == "code_inline":
        start = out.pos
        out.add(node.content)
        out.wrap("code", start)
    elif kind in _FORMATS:
        start = out.pos
        inline(out, node, in_link)
        out.wrap(_FORMATS[kind], start)
    elif kind == "link":
        _link(out, node, str(node.attrs.get("href", "")), in_link, lambda: inline(out, node, True))
    elif kind == "image":
        src = str(node.attrs.get("src", ""))
        alt = plain(node) or src
        if in_link:
            out.add(alt)
        else:
            _link(out, node, src, in_link, lambda: out.add(alt))
    else:  # a node type a later markdown-it adds: its text, never lost
        out.add(node.content)
        inline(out, node, in_link)


def _link(
    out: Builder, node: SyntaxTreeNode, url: str, in_link: bool, body: Callable[[], None]
) -> None:
    start = out.pos
    body()
    if URL_OK.match(url) and not in_link:
        if out.pos == start:
            out.add(url)
        out.wrap("text_link", start, url=normalizeLink(url))
    elif url:
        out.add(f" ({url})")


def plain(node: SyntaxTreeNode) -> str:
    """The text of an inline node and its children, without markup."""
    parts: list[str] = []
    for child in node.children:
        if child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.children:
            parts.append(plain(child))
        else:
            parts.append(child.content)
    return "".join(parts)
