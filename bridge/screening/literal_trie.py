"""One regular expression for a set of literal strings, factored as a trie (pure).

`alternation(literals)` matches at a position exactly when one of the literals
starts there, as `a|b|c` does, but `re` tries one branch per distinct first
character instead of one per literal (`pin|pincode|puk` becomes
`p(?:in(?:code)?|uk)`): a search over many literals costs a fraction of the
plain alternation's. Longer literals are tried first at each step, so a match
is the longest literal that starts there. Use it where what counts is whether
and where a literal starts, not which one matched. `Occurring(words).present(text)`
says which of the literals occur in a text, in one pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterable


def alternation(literals: Iterable[str]) -> str:
    """A pattern that matches where one of `literals` (non-empty strings) starts."""
    words = sorted(set(literals))
    if not words or "" in words:
        raise ValueError("alternation needs non-empty literals")
    return _node(words)


def _node(words: list[str]) -> str:
    """The pattern for `words` (sorted, distinct; "" means: may end here)."""
    ends = "" in words
    groups: dict[str, list[str]] = {}
    for w in words:
        if w:
            groups.setdefault(w[0], []).append(w[1:])
    branches = []
    for first, tails in groups.items():
        rest = _node(tails) if tails != [""] else ""
        branches.append(re.escape(first) + rest)
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    if not ends:
        return body
    # a literal ends here, longer ones go on: try the longer first (greedy `?`)
    return "(?:" + body + ")?" if len(branches) > 1 or len(body) > 1 else body + "?"


def compile_shipped(pattern: str) -> re.Pattern[str]:
    """`re.compile` of a pattern made only from roost's shipped rules and tables (a word
    trie `Occurring(..., shipped=True)`, a keyword gate `Keywords(..., shipped=True)`,
    what a `Scanner(..., shipped=True)` reads): `bridge.regex_code`'s constant site for
    them, so it is kept across processes. Never for a pattern of anything else."""
    return re.compile(pattern)


class Occurring:
    """Which of a fixed set of literals occur in a text, in one `re` pass over it.

    `present(text)` is `{w for w in words if w in text}`: a lookahead of the
    trie finds at each position the longest literal that starts there, and
    every literal that is a prefix of it starts there too (kept per literal)."""

    __slots__ = ("_find", "_prefixes")

    def __init__(self, words: Iterable[str], shipped: bool = False) -> None:
        """`shipped`: the words are shipped tables' (the injection screen's), so its pattern
        is kept across processes (`bridge.regex_code`); never for any other words."""
        known = frozenset(words)
        made = compile_shipped if shipped else re.compile
        self._find = made(f"(?=({alternation(known)}))")
        self._prefixes = {
            w: tuple(w[:k] for k in range(1, len(w) + 1) if w[:k] in known) for w in known
        }

    def present(self, text: str) -> set[str]:
        found: set[str] = set()
        for longest in set(self._find.findall(text)):
            found.update(self._prefixes[longest])
        return found
