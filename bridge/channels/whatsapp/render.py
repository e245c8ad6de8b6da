"""Markdown -> WhatsApp messages: its own formatting, split at 4096 characters.

An answer is rendered once to text + spans (`bridge.channels.common.text`:
markdown-it-py's tokens), split there (never inside a word when a space or
line break is near, never inside an emoji sequence or a surrogate pair, a
span cut with its piece) and each piece is written out with WhatsApp's
markers (its "Format text" help): bold `*x*`, italic `_x_`, strikethrough
`~x~`, inline code `` `x` ``, a code block ```` ```x``` ````, a quote as
"> " at each line start. What WhatsApp cannot show is written so it still
reads: a link is its text with the address after it in parentheses,
headings are bold, tables a monospace block, lists bullets and numbers. A
marker is written only where WhatsApp reads it as one: hugging the text
(spaces at a span's edges stay outside), not inside a word (a format that
starts or ends mid-word is left plain rather than showing stray marks), one
pair per line (a format never spans a line break). WhatsApp has no escape
and ends code at the next ``` (or `), so no two backticks of the text stand
together in what is written (a WORD JOINER between them, invisible) and inline
code that holds a backtick is written as ``` monospace: a tool's code, or a URL,
cannot close its block and format what follows as roost's own text. Markers
count against the limit: a piece they push past it is split again, smaller.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bridge.channels.common.text import Entity, Rendered, render, split, utf16_len

LIMIT = 4096  # characters of one text message (counted here in UTF-16 units: never more)
MARKS = {"bold": "*", "italic": "_", "strikethrough": "~", "code": "`"}
BLOCK = "```"
TICK = "`"
JOIN = "\u2060"  # WORD JOINER: invisible; written between two backticks that are not one marker
_RUN = re.compile("``+")
QUOTE = "> "
NO_SPAN_CAP = 1 << 30  # WhatsApp has no cap on formatted spans per message (Telegram: 100)


@dataclass(frozen=True, slots=True)
class _Pair:
    start: int  # code point index of the first character inside
    end: int  # code point index after the last one
    opener: str
    closer: str


def chunks(markdown: str, limit: int = LIMIT) -> list[str]:
    """The answer as WhatsApp text messages of at most `limit` units each."""
    out: list[str] = []
    for piece in split(render(markdown), limit, NO_SPAN_CAP):
        out.extend(_fitted(piece, limit))
    return [text for text in out if text.strip()]


def to_whatsapp(rendered: Rendered) -> str:
    """One piece of rendered text with WhatsApp's markers written in."""
    text = rendered.text
    at = _code_points(text)
    pairs: list[_Pair] = []
    prefixes: set[int] = set()
    for entity in rendered.entities:
        start, end = at[entity.offset], at[entity.end]
        if entity.type == "pre":
            pairs.append(_Pair(start, end, BLOCK, BLOCK))
        elif entity.type == "code" and TICK in text[start:end]:
            pairs.extend(_marked(text, start, end, BLOCK))  # inline monospace holds a `
        elif entity.type in MARKS:
            pairs.extend(_marked(text, start, end, MARKS[entity.type]))
        elif entity.type == "blockquote":
            prefixes.update(_line_starts(text, start, end))
        elif entity.type == "text_link" and entity.url:
            pairs.append(_Pair(start, end, "", _address(text[start:end], entity.url)))
    return _written(text, pairs, prefixes)


def _fitted(piece: Rendered, limit: int) -> list[str]:
    text = to_whatsapp(piece)
    size = utf16_len(text)
    if size <= limit:
        return [text]
    plain = utf16_len(piece.text)
    smaller = max(1, min(plain - 1, plain - (size - limit) - 8, limit // 2 + plain // 2))
    return [t for sub in split(piece, smaller, NO_SPAN_CAP) for t in _fitted(sub, limit)]


def _code_points(text: str) -> dict[int, int]:
    """UTF-16 offset -> code point index, for every boundary between characters."""
    at = {0: 0}
    units = 0
    for i, ch in enumerate(text):
        units += 2 if ord(ch) > 0xFFFF else 1
        at[units] = i + 1
    return at


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _marked(text: str, start: int, end: int, mark: str) -> list[_Pair]:
    """One pair per line of the span, hugging its text; none where WhatsApp would not
    read the marks (inside a word)."""
    pairs = []
    line_start = start
    while line_start < end:
        newline = text.find("\n", line_start, end)
        line_end = end if newline < 0 else newline
        lo, hi = line_start, line_end
        while lo < hi and text[lo].isspace():
            lo += 1
        while hi > lo and text[hi - 1].isspace():
            hi -= 1
        inside_word = (lo > 0 and _word(text[lo - 1])) or (hi < len(text) and _word(text[hi]))
        if lo < hi and (mark in (TICK, BLOCK) or not inside_word):
            pairs.append(_Pair(lo, hi, mark, mark))
        line_start = line_end + 1
    return pairs


def _line_starts(text: str, start: int, end: int) -> list[int]:
    return [start, *(i + 1 for i in range(start, end - 1) if text[i] == "\n")]


def _address(shown: str, url: str) -> str:
    """What follows a link's text: its address, unless the text already is it."""
    bare = url.removeprefix("mailto:")
    return "" if shown.strip() in (url, bare) else f" ({bare})"


def _written(text: str, pairs: list[_Pair], prefixes: set[int]) -> str:
    opens: dict[int, list[tuple[int, _Pair]]] = {}
    closes: dict[int, list[tuple[int, _Pair]]] = {}
    for k, pair in enumerate(pairs):
        opens.setdefault(pair.start, []).append((k, pair))
        closes.setdefault(pair.end, []).append((k, pair))
    out: list[str] = []
    for i in range(len(text) + 1):
        # inner ones close first; of two over the same text, the one opened last
        for _, pair in sorted(closes.get(i, ()), key=lambda kp: (-kp[1].start, -kp[0])):
            out.append(pair.closer)
        if i in prefixes:
            out.append(QUOTE)
        # outer ones open first; of two over the same text, in the order of the spans
        for _, pair in sorted(opens.get(i, ()), key=lambda kp: (-kp[1].end, kp[0])):
            out.append(pair.opener)
        if i < len(text):
            out.append(text[i])
    written = "".join(out)
    return written if TICK not in written else _apart(out)


def _apart(parts: list[str]) -> str:
    """`parts` written with no backtick run but the markers: WhatsApp has no escape
    and ends code at the next ``` (or `), so a backtick of the text next to another
    one (in a tool's code, a URL, beside a marker) gets a JOIN before it. The code
    reads as written; nothing in it can close its block and format what follows as
    roost's own text (session 47). A part is a marker (`, ```), one character of the
    text, or a link's address (" (https://…)") whose own runs are set apart too."""
    for k in [k for k, part in enumerate(parts) if TICK in part]:
        part = parts[k]
        if len(part) > 1 and part != BLOCK:
            part = _RUN.sub(lambda run: JOIN.join(run.group()), part)
        j = k - 1
        while j >= 0 and not parts[j]:  # a link's opener is ""
            j -= 1
        if part[0] == TICK and j >= 0 and parts[j][-1] == TICK:
            part = JOIN + part
        parts[k] = part
    return "".join(parts)


__all__ = ["LIMIT", "Entity", "chunks", "to_whatsapp"]
