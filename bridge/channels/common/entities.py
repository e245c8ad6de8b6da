"""Telegram text + entities: the types, a builder, and Telegram's nesting rules.

Telegram counts entity offsets and lengths in UTF-16 code units and refuses
entities that overlap in ways its rules forbid (Bot API, "MessageEntity"):
two entities that share characters must nest; bold, italic, underline,
strikethrough and spoiler may contain or sit inside anything except `pre`
and `code`; blockquotes do not nest; the other kinds (code, pre, text_link)
contain nothing of each other. `legal` rewrites a rendering's entities so
they obey those rules (a format is cut around a code span, a code span
inside a link is dropped, a quote is cut around a code block, an inner
quote is dropped); `trim` drops the text's outer white space and clips the
entities to what remains. Pure functions, no telegram import.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

FORMATS = frozenset({"bold", "italic", "underline", "strikethrough", "spoiler"})
CODE = frozenset({"code", "pre"})


@dataclass(frozen=True, slots=True)
class Entity:
    """A Telegram message entity; offset and length in UTF-16 code units."""

    type: str
    offset: int
    length: int
    language: str | None = None
    url: str | None = None

    @property
    def end(self) -> int:
        return self.offset + self.length


@dataclass(frozen=True, slots=True)
class Rendered:
    text: str
    entities: tuple[Entity, ...] = ()


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


class Builder:
    """Accumulates text and entities, tracking the UTF-16 position.

    `indent` is written after every `newline()` (list items indent their
    continuation lines); `add` writes text as it is.
    """

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pos = 0
        self.entities: list[Entity] = []
        self.indent = ""

    def add(self, text: str) -> None:
        if text:
            self.parts.append(text)
            self.pos += utf16_len(text)

    def newline(self, blank: bool = False) -> None:
        self.add(("\n\n" if blank else "\n") + self.indent)

    def wrap(self, kind: str, start: int, **extra: str | None) -> None:
        if self.pos > start:
            self.entities.append(Entity(kind, start, self.pos - start, **extra))

    @property
    def text(self) -> str:
        return "".join(self.parts)


class _Disjoint:
    """Entities that do not overlap each other, sorted: containment and the
    ones inside a range answered by bisection (so `legal` stays O(n log n))."""

    def __init__(self, entities: list[Entity]) -> None:
        self.items = sorted(entities, key=_outer_first)
        self._starts = [e.offset for e in self.items]

    def holds(self, inner: Entity) -> bool:
        k = bisect_right(self._starts, inner.offset) - 1
        return k >= 0 and self.items[k].end >= inner.end

    def within(self, lo: int, hi: int) -> list[Entity]:
        k = bisect_left(self._starts, lo)
        found: list[Entity] = []
        while k < len(self.items) and self.items[k].offset < hi:
            found.append(self.items[k])
            k += 1
        return found


def _cut(entity: Entity, holes: _Disjoint) -> list[Entity]:
    """`entity` without the ranges of `holes` (each piece keeps type and extras)."""
    pieces: list[Entity] = []
    start = entity.offset
    for hole in holes.within(entity.offset, entity.end):
        if hole.offset > start:
            pieces.append(_span(entity, start, hole.offset))
        start = max(start, hole.end)
    if start < entity.end:
        pieces.append(_span(entity, start, entity.end))
    return pieces


def _span(entity: Entity, start: int, end: int) -> Entity:
    return Entity(entity.type, start, end - start, entity.language, entity.url)


def legal(entities: list[Entity]) -> list[Entity]:
    """The entities rewritten to obey Telegram's nesting rules (see the docstring).

    Markdown nests properly, so code spans, code blocks and links never
    overlap their own kind; that is what makes the bisection valid."""
    pres = _Disjoint([e for e in entities if e.type == "pre"])
    links = [e for e in entities if e.type == "text_link" and not pres.holds(e)]
    link_set = _Disjoint(links)
    codes = [
        e for e in entities if e.type == "code" and not pres.holds(e) and not link_set.holds(e)
    ]
    holes = _Disjoint(pres.items + codes)
    out: list[Entity] = [*pres.items, *links, *codes]
    last_quote: Entity | None = None
    for quote in sorted((e for e in entities if e.type == "blockquote"), key=_outer_first):
        if last_quote is None or quote.end > last_quote.end:  # not inside the last one kept
            last_quote = quote
            out += _cut(quote, pres)
    for e in entities:
        if e.type in FORMATS:
            out += _cut(e, holes)
        elif e.type not in CODE | {"text_link", "blockquote"}:
            out.append(e)
    return out


def _outer_first(e: Entity) -> tuple[int, int]:
    return (e.offset, -e.length)


def trim(text: str, entities: list[Entity]) -> Rendered:
    """Drop leading/trailing whitespace and clip entities to what remains."""
    stripped = text.strip()
    if not stripped:
        return Rendered("")
    lead = utf16_len(text[: len(text) - len(text.lstrip())])
    total = utf16_len(stripped)
    kept: list[Entity] = []
    for e in entities:
        start = max(e.offset - lead, 0)
        end = min(e.end - lead, total)
        if end > start:
            kept.append(Entity(e.type, start, end - start, e.language, e.url))
    kept.sort(key=_outer_first)
    return Rendered(stripped, tuple(kept))
