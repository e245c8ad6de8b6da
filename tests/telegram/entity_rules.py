"""Telegram's rules for message entities, written from the Bot API docs, for tests.

Independent of the renderer on purpose: the fake Bot API and the corpus test
judge renderings with this. Entities must lie inside the text, on code-point
boundaries; two that share characters must nest; bold, italic, underline,
strikethrough and spoiler may contain or be part of anything except `pre`
and `code`; blockquotes never nest; a blockquote may hold formats, links and
code spans (not code blocks); all other kinds contain nothing of each other.
"""

from __future__ import annotations

from typing import Any

FORMATS = frozenset({"bold", "italic", "underline", "strikethrough", "spoiler"})
QUOTES = frozenset({"blockquote", "expandable_blockquote"})


def code_point_starts(text: str) -> set[int]:
    starts, pos = {0}, 0
    for ch in text:
        pos += 2 if ord(ch) > 0xFFFF else 1
        starts.add(pos)
    return starts


def problem(text: str, entities: list[dict[str, Any]]) -> str | None:
    """Why Telegram would refuse these entities on this text, or None."""
    units = len(text.encode("utf-16-le")) // 2
    starts = code_point_starts(text)
    spans = []
    for e in entities:
        kind, offset, length = str(e["type"]), int(e["offset"]), int(e["length"])
        if offset < 0 or length <= 0 or offset + length > units:
            return f"{kind} entity out of text"
        if offset not in starts or offset + length not in starts:
            return f"{kind} entity splits a character"
        if kind == "text_link" and not str(e.get("url", "")):
            return "text_link without url"
        spans.append((kind, offset, offset + length))
    spans.sort(key=lambda s: (s[1], -s[2], s[0] not in QUOTES))  # outer first
    for i, (a, _start, a1) in enumerate(spans):
        for b, b0, b1 in spans[i + 1 :]:
            if b0 >= a1:
                break
            if b1 > a1:
                return f"{a} and {b} overlap without nesting"
            why = _nest(a, b)
            if why:
                return why
    return None


def _nest(outer: str, inner: str) -> str | None:
    if outer in QUOTES and inner in QUOTES:
        return "nested blockquotes"
    if outer in FORMATS or inner in FORMATS:
        other = inner if outer in FORMATS else outer
        return f"a format with {other}" if other in ("pre", "code") else None
    if outer in QUOTES and inner != "pre":
        return None
    return f"{inner} inside {outer}"
