"""Which of many lower-case keywords occur in a text, for a fraction of one search each (pure).

`Keywords(words).present(lowered)` is `{w for w in words if w in lowered}`.
Most of the secret rules' keywords hold a character ordinary prose rarely
has (`_`, `-`, `.`, `:`, a digit...: `ghp_`, `glpat-`, `sg.`). An occurrence of
such a keyword lies inside one run of keyword characters (letters a-z and
those marks) that holds a mark; one `re` pass gathers the runs that hold one,
joined by newlines (never in a keyword), into a text that is short for prose
and code alike, and those keywords are looked for there, each group only if
the reduced text holds the group's mark at all (a `memchr`). The keywords of
letters alone (`basic`, `bearer`) are looked for in the text itself. Every
answer is the answer of `in` on the whole text (tests/screening: against it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from bridge.screening.literal_trie import compile_shipped

_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyz")
# marks from the rarest in prose and code to the most common: a keyword is grouped
# under its rarest one, and that group looked at only when the mark occurs
_RARITY = "$~=/_0123456789:-."


def _rank(mark: str) -> int:
    return _RARITY.index(mark) if mark in _RARITY else -1


def _cls(chars: Iterable[str]) -> str:
    return "[" + "".join(re.escape(c) for c in sorted(chars)) + "]"


class Keywords:
    """A fixed set of lower-case keywords, looked for together."""

    __slots__ = ("_groups", "_plain", "_runs", "_runs_sparse")

    def __init__(self, words: Iterable[str], shipped: bool = False) -> None:
        """`shipped`: the words are the shipped rules' keywords, so its patterns are
        kept across processes (`bridge.regex_code`); never for any other words."""
        words = sorted(set(words))
        marks = {c for w in words for c in w} - _LETTERS - {" ", "\n"}
        alphabet = _LETTERS | marks
        self._plain = tuple(w for w in words if not (set(w) & marks) or not set(w) <= alphabet)
        groups: dict[str, list[str]] = {}
        for w in words:
            if w not in self._plain:
                groups.setdefault(min(set(w) & marks, key=_rank), []).append(w)
        self._groups = tuple((mark, tuple(ws)) for mark, ws in sorted(groups.items()))
        self._runs = self._runs_sparse = None
        if marks:
            a, m = _cls(alphabet), _cls(marks)
            made = compile_shipped if shipped else re.compile
            # a maximal run of keyword characters that holds a mark: from its start (the
            # lookbehind), its letters, a mark, the rest of the run (possessive: linear)
            self._runs = made(f"(?<!{a})[a-z]*+{m}{a}*+")
            # the same runs, found from a keyword character (`re` skips to one quickly in
            # another script, where they are few; in English text the first is quicker)
            self._runs_sparse = made(f"{a}(?<!{a}.)(?:(?<={m})|[a-z]*+{m}){a}*+")

    def present(self, lowered: str) -> set[str]:
        """The keywords that occur in `lowered` (`w in lowered` for each)."""
        found = {w for w in self._plain if w in lowered}
        if self._runs is None or self._runs_sparse is None:
            return found
        runs = self._runs if lowered.isascii() else self._runs_sparse
        reduced = "\n".join(runs.findall(lowered))
        for mark, words in self._groups:
            if mark in reduced:
                found.update(w for w in words if w in reduced)
        return found
