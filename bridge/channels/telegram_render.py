"""Markdown -> Telegram text + entities (a pure function, no telegram import).

Models answer in Markdown; Telegram wants plain text plus a list of
entities whose offsets and lengths count UTF-16 code units. Sending text +
entities (never `parse_mode`) means there is nothing to escape, so a model
answer can never trigger "can't parse entities" through bad escaping.

Supported: fenced code (``` / ~~~, with language, unclosed fences run to the
end so a half-streamed answer renders), `inline code`, **bold**, __bold__,
*italic*, _italic_, ~~strike~~, [text](url), # headings (bold), > quotes,
- / * / + bullets (•), horizontal rules, backslash escapes. Anything that
does not match stays literal text. Intraword underscores (snake_case) are
never emphasis.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([A-Za-z0-9_+#.-]*)[^`]*$")
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$")
_QUOTE = re.compile(r"^ {0,3}>\s?(.*)$")
_RULE = re.compile(r"^ {0,3}([-*_])(?:\s*\1){2,}\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_LINK = re.compile(r"\[([^\]\n]*)\]\(\s*(<[^>\s]+>|[^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
_URL_OK = re.compile(r"^(https?://|tg://|mailto:)[^\s]+$", re.IGNORECASE)
_PUNCT = frozenset("\\`*_{}[]()#+-.!|~>")
_DELIMS = ("**", "__", "~~", "*", "_")
_TYPES = {"**": "bold", "__": "bold", "~~": "strikethrough", "*": "italic", "_": "italic"}
RULE_TEXT = "──────────"


@dataclass(frozen=True, slots=True)
class Entity:
    """A Telegram message entity; offset and length in UTF-16 code units."""

    type: str
    offset: int
    length: int
    language: str | None = None
    url: str | None = None


@dataclass(frozen=True, slots=True)
class Rendered:
    text: str
    entities: tuple[Entity, ...] = ()


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


class _Out:
    """Accumulates text and entities, tracking the UTF-16 position."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pos = 0
        self.entities: list[Entity] = []

    def add(self, text: str) -> None:
        if text:
            self.parts.append(text)
            self.pos += utf16_len(text)

    def wrap(self, kind: str, start: int, **extra: str | None) -> None:
        if self.pos > start:
            self.entities.append(Entity(kind, start, self.pos - start, **extra))


def render(markdown: str) -> Rendered:
    """Render Markdown to text + entities; leading/trailing whitespace is trimmed."""
    out = _Out()
    lines = markdown.replace("\r\n", "\n").split("\n")
    i, first = 0, True
    while i < len(lines):
        if not first:
            out.add("\n")
        first = False
        i = _block(out, lines, i)
    return _trim("".join(out.parts), out.entities)


def _block(out: _Out, lines: list[str], i: int) -> int:
    """Render the block starting at line i; return the index of the next line."""
    line = lines[i]
    fence = _FENCE.match(line)
    if fence:
        marker, language = fence.group(1), fence.group(2)
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            stripped = lines[j].strip()
            if stripped.startswith(marker[0] * len(marker)) and not stripped.strip(marker[0]):
                break
            body.append(lines[j])
            j += 1
        start = out.pos
        out.add("\n".join(body))
        out.wrap("pre", start, language=language or None)
        return j + 1
    if _RULE.match(line):
        out.add(RULE_TEXT)
        return i + 1
    heading = _HEADING.match(line)
    if heading:
        start = out.pos
        _inline(out, heading.group(1))
        out.wrap("bold", start)
        return i + 1
    if _QUOTE.match(line):
        start = out.pos
        j = i
        while j < len(lines):
            quoted = _QUOTE.match(lines[j])
            if quoted is None:
                break
            if j > i:
                out.add("\n")
            _inline(out, quoted.group(1))
            j += 1
        out.wrap("blockquote", start)
        return j
    bullet = _BULLET.match(line)
    if bullet:
        out.add(bullet.group(1) + "• ")
        _inline(out, bullet.group(2))
        return i + 1
    _inline(out, line)
    return i + 1


def _inline(out: _Out, s: str) -> None:
    """Inline Markdown of one line (or part of one)."""
    no_closer: dict[str, int] = {}  # delimiter -> position from which no closer exists
    literal: list[str] = []

    def flush() -> None:
        if literal:
            out.add("".join(literal))
            literal.clear()

    i, n = 0, len(s)
    while i < n:
        ch = s[i]
        if ch == "\\" and i + 1 < n and s[i + 1] in _PUNCT:
            literal.append(s[i + 1])
            i += 2
            continue
        if ch == "`":
            run = _run(s, i, "`")
            end = _find_code_end(s, i + run, run, no_closer)
            if end is None:
                literal.append("`" * run)
                i += run
                continue
            flush()
            body = s[i + run : end]
            if len(body) > 2 and body.startswith(" ") and body.endswith(" ") and body.strip():
                body = body[1:-1]
            start = out.pos
            out.add(body)
            out.wrap("code", start)
            i = end + run
            continue
        if ch == "[":
            link = _LINK.match(s, i)
            if link:
                flush()
                url = link.group(2).strip("<>")
                start = out.pos
                _inline(out, link.group(1))
                if _URL_OK.match(url):
                    out.wrap("text_link", start, url=url)
                elif url:
                    out.add(f" ({url})")
                i = link.end()
                continue
        if ch in "*_~":
            matched = _emphasis(s, i, no_closer)
            if matched is not None:
                delim, close = matched
                flush()
                start = out.pos
                _inline(out, s[i + len(delim) : close])
                out.wrap(_TYPES[delim], start)
                i = close + len(delim)
                continue
            run = _run(s, i, ch)
            literal.append(s[i : i + run])
            i += run
            continue
        literal.append(ch)
        i += 1
    flush()


def _run(s: str, i: int, ch: str) -> int:
    j = i
    while j < len(s) and s[j] == ch:
        j += 1
    return j - i


def _find_code_end(s: str, start: int, run: int, no_closer: dict[str, int]) -> int | None:
    key = "`" * run
    if start >= no_closer.get(key, len(s) + 1):
        return None
    j = start
    while j < len(s):
        if s[j] == "`":
            length = _run(s, j, "`")
            if length == run:
                return j
            j += length
        else:
            j += 1
    no_closer[key] = min(start, no_closer.get(key, start))
    return None


def _emphasis(s: str, i: int, no_closer: dict[str, int]) -> tuple[str, int] | None:
    """(delimiter, closer index) when s[i:] opens emphasis that closes later."""
    for delim in _DELIMS:
        if not s.startswith(delim, i):
            continue
        after = i + len(delim)
        if after >= len(s) or s[after].isspace():
            continue
        if delim[0] == "_" and i > 0 and s[i - 1].isalnum():
            continue
        close = _find_closer(s, delim, after, no_closer)
        if close is not None:
            return delim, close
    return None


def _find_closer(s: str, delim: str, start: int, no_closer: dict[str, int]) -> int | None:
    if start >= no_closer.get(delim, len(s) + 1):
        return None
    ch, size = delim[0], len(delim)
    j = start
    while j < len(s):
        c = s[j]
        if c == "\\":
            j += 2
            continue
        if c == "`":
            run = _run(s, j, "`")
            end = _find_code_end(s, j + run, run, {})
            j = end + run if end is not None else j + run
            continue
        if c == ch:
            run = _run(s, j, ch)
            close = j + run - size
            usable = run >= size and not (size == 1 and run == 2)
            valid = (
                usable
                and close > start
                and not s[close - 1].isspace()
                and not (ch == "_" and close + size < len(s) and s[close + size].isalnum())
            )
            if valid:
                return close
            j += run
            continue
        j += 1
    no_closer[delim] = min(start, no_closer.get(delim, start))
    return None


def _trim(text: str, entities: list[Entity]) -> Rendered:
    """Drop leading/trailing whitespace and clip entities to what remains."""
    stripped = text.strip()
    if not stripped:
        return Rendered("")
    lead = utf16_len(text[: len(text) - len(text.lstrip())])
    total = utf16_len(stripped)
    kept: list[Entity] = []
    for e in entities:
        start = max(e.offset - lead, 0)
        end = min(e.offset + e.length - lead, total)
        if end > start:
            kept.append(Entity(e.type, start, end - start, e.language, e.url))
    kept.sort(key=lambda e: (e.offset, -e.length))
    return Rendered(stripped, tuple(kept))
