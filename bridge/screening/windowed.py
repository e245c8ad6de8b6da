"""Regex search that runs a pattern only near the literals every match holds (pure).

`Scanner(pattern).search(text, pos)` and `.finditer(text)` return the same
matches as `pattern.search(text, pos)` and `pattern.finditer(text)`, faster on
long text. `regex_shape.shape` reads from the parsed pattern strings one of
which every match contains, the longest match (`width`) and how far its
lookaheads read. A match starts at most `width` characters before one of those
literals, so the pattern runs only on spans around them: the first literal
from where the search stands (one `re` search, which skips ahead with its own
prefix scan; the literals are one trie, `literal_trie`, so `re` tries one
branch per first character, not one per literal), extended by one `re` match
over the literals that follow it within `width` of each other (at most
`_CHUNK` characters). The pattern then
runs on the span with `endpos` far enough past it that no match starting
inside the span can see the cut; a match found past the span is not trusted
(the cut may have shaped it), the next span finds it again. Lookbehinds and
`\\b` still see the whole text (`re` reads before `pos`). Every step is one
call into `re`, so Python does a few steps per span, never one per character.
When every match must also hold one of another set of literals (`ignore ...
instructions`), a text without any of them is passed over after one search.
Texts shorter than two spans simply run the pattern.

Case-insensitive patterns look for their literals in a view of the text folded
as `re` folds it: simple lower case, then the few characters `re` treats as
equal beyond that (ſ and s, ı and i, final and medial sigma, ...; its
`_EXTRA_CASES`; İ, whose lower case is two characters, as i). When folding
would change the length of a text (no such character in Unicode 14), or the pattern
promises no literal, has a backreference or can match the empty string, the
pattern runs on the whole text: never another answer, at worst the old speed.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from functools import lru_cache
from re import _compiler  # type: ignore[attr-defined]

from bridge.screening.literal_trie import alternation, compile_shipped
from bridge.screening.regex_shape import shape
from bridge.screening.shape_cache import shipped_shape

_MAX_WIDTH = 8192  # longer patterns run on the whole text
_CHUNK = 4096  # the longest stretch one span's literals are gathered over


def _fold_table() -> dict[int, int] | None:
    """Each character `re` treats as equal to another under IGNORECASE, beyond simple
    lower case, mapped to the smallest of its class."""
    extra = getattr(_compiler, "_EXTRA_CASES", None)
    if not isinstance(extra, dict):
        return None
    table: dict[int, int] = {}
    for lo, others in extra.items():
        rep = min(lo, *others)
        for cp in (lo, *others):
            if cp != rep:
                table[cp] = rep
    return table


_FOLD = _fold_table()
_FOLDED = re.compile("[" + "".join(f"\\U{cp:08x}" for cp in _FOLD or {0: 0}) + "]")


@lru_cache(maxsize=2)  # the speech rules fold the same text one after the other
def fold(text: str) -> str | None:
    """`text` with each character replaced as `re`'s IGNORECASE compares it, or None
    when that would not keep every character in its place."""
    # İ is the one character whose lower case is two (i + U+0307); `re` folds it to i
    low = (text.replace("\u0130", "i") if "\u0130" in text else text).lower()
    if _FOLD is None or len(low) != len(text):
        return None
    return low.translate(_FOLD) if _FOLDED.search(low) else low


def _alternation(literals: frozenset[str], caseless: bool) -> str | None:
    """One pattern of the literals, factored as a trie (`literal_trie`: one branch per
    distinct first character), folded when the pattern ignores case."""
    if caseless:
        folded = [fold(lit) for lit in literals]
        if None in folded:
            return None
        literals = frozenset(f for f in folded if f is not None)
    if "" in literals:  # every position holds it: nothing to look for
        return None
    return alternation(literals)


class Scanner:
    """`pattern.search` and `pattern.finditer`, run near the literals every match holds.

    Cheap to make: the pattern is read on its first search (or `prepare()`), not at
    import."""

    __slots__ = (
        "_also", "_caseless", "_chain", "_finder", "_literals", "_reads", "_ready", "_shipped",
        "_short", "_width", "pattern",
    )  # fmt: skip

    def __init__(self, pattern: re.Pattern[str], *, shipped: bool = False) -> None:
        """`shipped`: the pattern is roost's own (written in its source or its rule file),
        so the patterns read from it may be kept across processes like `.pyc` files
        (`bridge.regex_code`); never for one built from what a person sent or a secret,
        whose literals those patterns hold."""
        self.pattern = pattern
        self._shipped = shipped
        self._ready = False
        self._caseless = False
        self._width = self._reads = 0
        self._finder: re.Pattern[str] | None = None
        self._chain: re.Pattern[str] | None = None
        self._literals: frozenset[str] = frozenset()
        self._short = -1  # texts up to this long run the pattern itself (known once read)
        self._also: tuple[re.Pattern[str], ...] = ()

    def _read(self) -> None:
        s = shipped_shape(self.pattern) if self._shipped else shape(self.pattern)
        self._literals = s.literals
        self._caseless = s.caseless
        self._width = s.width
        self._reads = s.width + s.reach + 4  # how far past its start a match attempt reads
        if s.literals and s.bounded and s.shortest >= 1 and s.width <= _MAX_WIDTH:
            alternation = _alternation(s.literals, s.caseless)
            if alternation is not None:
                made = compile_shipped if self._shipped else re.compile
                self._finder = made(alternation)
                # a literal, then each literal that starts within `width` of the last one's end
                gap = f"(?s:.{{0,{s.width}}}?)"
                self._chain = made(f"(?:{alternation})(?:{gap}(?:{alternation}))*")
                others = (_alternation(more, s.caseless) for more in s.also)
                self._also = tuple(made(a) for a in others if a is not None)
        self._short = 2 * self._reads if self._finder is not None else sys.maxsize
        self._ready = True

    def prepare(self) -> None:
        """Read the pattern now, so its first search does not (`bridge.screening.prepare`)."""
        if not self._ready:
            self._read()

    @property
    def ready(self) -> bool:
        """The pattern was read: a search parses and compiles nothing."""
        return self._ready

    @property
    def literals(self) -> frozenset[str]:
        """Strings one of which every match holds, as the pattern is written (empty: none
        known); the scanner looks for them, so a match is only found where one occurs."""
        if not self._ready:
            self._read()
        return self._literals

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        if len(text) - pos <= self._short:  # short text: the pattern itself is quickest
            return self.pattern.search(text, pos)
        view = self._view(text, pos)
        if view is None:
            return self.pattern.search(text, pos)
        return next(self._matches(text, view, pos, None), None)

    def finditer(
        self, text: str, resume: Callable[[re.Match[str]], int] | None = None
    ) -> Iterator[re.Match[str]]:
        """Every match, as `pattern.finditer`; with `resume`, each next search starts at
        `resume(match)` instead of the match's end (it must lie past the match's start)."""
        if len(text) <= self._short and resume is None:
            return self.pattern.finditer(text)
        view = self._view(text, 0)
        if view is None:
            if resume is None:
                return self.pattern.finditer(text)
            return _plain(self.pattern, text, resume)
        return self._matches(text, view, 0, resume)

    def _view(self, text: str, pos: int) -> str | None:
        """The text the literals are looked for in; None: run the pattern on the whole text."""
        if not self._ready:
            self._read()
        if len(text) - pos <= self._short:
            return None
        return fold(text) if self._caseless else text

    def _spans(self, view: str, pos: int) -> Iterator[tuple[int, int]]:
        """(first, last): the starts a match may have from `pos` on, span by span."""
        assert self._finder is not None and self._chain is not None
        bound = pos
        while (hit := self._finder.search(view, bound)) is not None:
            q = hit.start()
            chain = self._chain.match(view, q, q + _CHUNK)
            last = (chain.end() if chain is not None else hit.end()) - 1
            yield max(bound, q - self._width), last
            bound = last + 1  # a later match holds a literal that starts after `last`

    def _matches(
        self, text: str, view: str, pos: int, resume: Callable[[re.Match[str]], int] | None
    ) -> Iterator[re.Match[str]]:
        if any(more.search(view, pos) is None for more in self._also):
            return  # a match would hold one of these literals too, and none is left
        n = len(text)
        for first, last in self._spans(view, pos):
            start = max(first, pos)
            while start <= last:
                m = self.pattern.search(text, start, min(n, last + self._reads))
                if m is None or m.start() > last:  # none starts in this span
                    break
                yield m
                pos = start = m.end() if resume is None else resume(m)


def _plain(
    pattern: re.Pattern[str], text: str, resume: Callable[[re.Match[str]], int]
) -> Iterator[re.Match[str]]:
    pos = 0
    # `re` clamps a start past the end to the end: stop there, or an empty match repeats
    while pos <= len(text) and (m := pattern.search(text, pos)) is not None:
        yield m
        pos = resume(m)
