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

Linear by construction: blocks are found line by line with anchored,
non-backtracking patterns; inline markup is parsed over index ranges of one
line with lookup tables built in one pass each (`_Line`), so a `[`, a
backtick run or an emphasis opener costs O(1) (O(log n) for code spans)
instead of a scan to the end of the line; a failed closer search per
delimiter is remembered for the rest of its range; nesting is capped.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([A-Za-z0-9_+#.-]*)[^`]*$")
_HEADING = re.compile(r" {0,3}#{1,6}\s+")
_QUOTE = re.compile(r"^ {0,3}>\s?(.*)$")
_RULE = re.compile(r"^ {0,3}([-*_])(?:\s*\1){2,}\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_URL_OK = re.compile(r"^(https?://|tg://|mailto:)[^\s]+$", re.IGNORECASE)
_PUNCT = frozenset("\\`*_{}[]()#+-.!|~>")
_DELIMS = ("**", "__", "~~", "*", "_")
_TYPES = {"**": "bold", "__": "bold", "~~": "strikethrough", "*": "italic", "_": "italic"}
RULE_TEXT = "──────────"
_MAX_DEPTH = 8  # emphasis/link nesting beyond this renders as literal text


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
        _inline(out, _heading_text(line[heading.end() :]))
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


class _Line:
    """One line of Markdown and lookups over it, each computed in one linear pass.

    `next_*[i]` is the first index >= i holding such a character (len(s) if
    none); `ticks[L]` lists the starts of the maximal backtick runs of length
    L. With them every link, code-span and emphasis question is answered in
    O(1) or O(log n), so no character is scanned again per `[` or backtick.
    """

    def __init__(self, s: str) -> None:
        self.s = s
        n = len(s)
        self.next_rbracket = _next_where(s, lambda c: c == "]")
        self.next_nonspace = _next_where(s, lambda c: not c.isspace())
        self.next_url_stop = _next_where(s, lambda c: c == ")" or c.isspace())
        self.next_angle_stop = _next_where(s, lambda c: c == ">" or c.isspace())
        self.next_quote = _next_where(s, lambda c: c == '"')
        self.ticks: dict[int, list[int]] = {}
        i = 0
        while i < n:
            if s[i] == "`":
                run = _run(s, i, "`")
                self.ticks.setdefault(run, []).append(i)
                i += run
            else:
                i += 1

    def code_end(self, start: int, run: int, hi: int) -> int | None:
        """Start of the first backtick run of exactly `run` in [start, hi)."""
        starts = self.ticks.get(run, [])
        k = bisect_left(starts, start)
        if k < len(starts) and starts[k] + run <= hi:
            return starts[k]
        return None

    def link(self, i: int, hi: int) -> tuple[int, int, str] | None:
        """`[text](url "title")` at i: (end of text, end of link, url)."""
        s = self.s
        close = self.next_rbracket[i + 1]
        if close + 1 >= hi or s[close + 1] != "(":
            return None
        p = self.next_nonspace[close + 2]
        if p >= hi:
            return None
        after = -1
        if s[p] == "<":
            q = self.next_angle_stop[p + 1]
            if q < hi and s[q] == ">" and q > p + 1:
                url, after = s[p + 1 : q], q + 1
        if after < 0:
            q = min(self.next_url_stop[p], hi)
            if q == p:
                return None
            url, after = s[p:q], q
        r = self.next_nonspace[after] if after < hi else hi
        if after < r < hi and s[r] == '"':
            e = self.next_quote[r + 1]
            if e < hi:
                r = self.next_nonspace[e + 1] if e + 1 < hi else hi
        if r >= hi or s[r] != ")":
            return None
        return close, r + 1, url


def _next_where(s: str, pred: Callable[[str], bool]) -> list[int]:
    n = len(s)
    out = [n] * (n + 2)
    for i in range(n - 1, -1, -1):
        out[i] = i if pred(s[i]) else out[i + 1]
    return out


def _heading_text(rest: str) -> str:
    """A heading's text without trailing spaces and closing #s (no backtracking)."""
    text = rest.rstrip()
    hashes = len(text) - len(text.rstrip("#"))
    if 0 < hashes < len(text) and text[-hashes - 1].isspace():
        text = text[:-hashes].rstrip()
    return text


def _inline(out: _Out, s: str) -> None:
    """Inline Markdown of one line."""
    _span(out, _Line(s), 0, len(s), 0)


def _span(out: _Out, line: _Line, lo: int, hi: int, depth: int) -> None:
    """Inline Markdown of line.s[lo:hi]. Each level scans its range a bounded
    number of times (a failed closer search per delimiter is remembered), and
    nesting deeper than _MAX_DEPTH is literal text, so the work is linear."""
    s = line.s
    if depth > _MAX_DEPTH:
        out.add(s[lo:hi])
        return
    no_closer: dict[str, int] = {}  # delimiter -> position from which no closer exists
    literal: list[str] = []

    def flush() -> None:
        if literal:
            out.add("".join(literal))
            literal.clear()

    i = lo
    while i < hi:
        ch = s[i]
        if ch == "\\" and i + 1 < hi and s[i + 1] in _PUNCT:
            literal.append(s[i + 1])
            i += 2
            continue
        if ch == "`":
            run = _run(s, i, "`", hi)
            end = line.code_end(i + run, run, hi)
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
            link = line.link(i, hi)
            if link:
                flush()
                close, end, url = link
                start = out.pos
                _span(out, line, i + 1, close, depth + 1)
                if _URL_OK.match(url):
                    out.wrap("text_link", start, url=url)
                elif url:
                    out.add(f" ({url})")
                i = end
                continue
        if ch in "*_~":
            matched = _emphasis(line, i, lo, hi, no_closer)
            if matched is not None:
                delim, close = matched
                flush()
                start = out.pos
                _span(out, line, i + len(delim), close, depth + 1)
                out.wrap(_TYPES[delim], start)
                i = close + len(delim)
                continue
            run = _run(s, i, ch, hi)
            literal.append(s[i : i + run])
            i += run
            continue
        literal.append(ch)
        i += 1
    flush()


def _run(s: str, i: int, ch: str, hi: int | None = None) -> int:
    """Length of the run of `ch` at i, not looking past hi."""
    end = len(s) if hi is None else hi
    j = i
    while j < end and s[j] == ch:
        j += 1
    return j - i


def _emphasis(
    line: _Line, i: int, lo: int, hi: int, no_closer: dict[str, int]
) -> tuple[str, int] | None:
    """(delimiter, closer index) when s[i:hi] opens emphasis that closes before hi."""
    s = line.s
    for delim in _DELIMS:
        if not s.startswith(delim, i, hi):
            continue
        after = i + len(delim)
        if after >= hi or s[after].isspace():
            continue
        if delim[0] == "_" and i > lo and s[i - 1].isalnum():
            continue
        close = _find_closer(line, delim, after, hi, no_closer)
        if close is not None:
            return delim, close
    return None


def _find_closer(
    line: _Line, delim: str, start: int, hi: int, no_closer: dict[str, int]
) -> int | None:
    if start >= no_closer.get(delim, hi + 1):
        return None
    s = line.s
    ch, size = delim[0], len(delim)
    j = start
    while j < hi:
        c = s[j]
        if c == "\\":
            j += 2
            continue
        if c == "`":
            run = _run(s, j, "`", hi)
            end = line.code_end(j + run, run, hi)
            j = end + run if end is not None else j + run
            continue
        if c == ch:
            run = _run(s, j, ch, hi)
            close = j + run - size
            usable = run >= size and not (size == 1 and run == 2)
            valid = (
                usable
                and close > start
                and not s[close - 1].isspace()
                and not (ch == "_" and close + size < hi and s[close + size].isalnum())
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
