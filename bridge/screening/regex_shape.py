"""What a compiled pattern's parse tree promises about its matches (pure functions).

`shape(pattern)` reads the tree `re` parsed the pattern into and returns:

- `literals`: strings one of which every match contains (empty when the tree
  promises none): a run of literal characters that every path consumes, or,
  for a group of alternatives every path passes, the union of what each
  alternative promises. Of all such sets the one with the longest shortest
  string is kept (longer literals occur less often); `also` holds the next
  few, each of which every match holds one of too.
  A small class of plain characters (`[0-9]`) counts as its characters.
- `caseless`: IGNORECASE holds for the whole pattern or for a group of it
  (the literals are then looked for case-folded, which finds more, never less).
- `width`, `shortest`: the longest and shortest match.
- `reach`: how many characters past any position a lookahead can read.
- `bounded`: false when the tree holds what this reading does not follow
  (backreferences, conditional groups).

`windowed.Scanner` uses it to run a pattern only near those literals.
`re._parser` is CPython's own parser (the linear-time test reads it too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser as P  # type: ignore[attr-defined]

_REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT)
_SMALL_CLASS = 16  # a class of at most this many characters counts as one-character literals
_UNKNOWN = (C.GROUPREF, C.GROUPREF_EXISTS, C.GROUPREF_IGNORE, C.GROUPREF_LOC_IGNORE,
            C.GROUPREF_UNI_IGNORE)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Shape:
    literals: frozenset[str]
    also: tuple[frozenset[str], ...]
    width: int
    shortest: int
    reach: int
    bounded: bool
    caseless: bool


_MAX_ALSO = 3  # further literal sets kept, the most telling first


def shape(pattern: re.Pattern[str]) -> Shape:
    tree = P.parse(pattern.pattern, pattern.flags)
    shortest, width = tree.getwidth()
    items = list(tree)
    ranked = sorted({frozenset(s) for s in _required(items)}, key=_rank)
    return Shape(
        literals=ranked[0] if ranked else frozenset(),
        also=tuple(ranked[1 : 1 + _MAX_ALSO]),
        width=width,
        shortest=shortest,
        reach=_reach(items),
        bounded=_bounded(items),
        caseless=bool(pattern.flags & re.IGNORECASE) or _scoped_caseless(items),
    )


def _rank(literals: frozenset[str] | set[str]) -> tuple[int, int, list[str]]:
    """Longer shortest literal first (rarer), then fewer literals, then a fixed order."""
    return -min(map(len, literals)), len(literals), sorted(literals)


def _required(items: list[tuple[object, object]]) -> list[set[str]]:
    """Sets of literals such that every match of this sequence holds one of each set."""
    found: list[set[str]] = []
    run: list[str] = []
    for op, av in items:
        if op is C.LITERAL:
            run.append(chr(av))  # type: ignore[arg-type]
            continue
        if run:  # a run of literals every path consumes
            found.append({"".join(run)})
            run = []
        found.extend(_required_in(op, av))
    if run:
        found.append({"".join(run)})
    return found


def _required_in(op: object, av: object) -> list[set[str]]:
    if op is C.SUBPATTERN:
        return _required(list(av[3]))  # type: ignore[index]
    if op is C.ATOMIC_GROUP:
        return _required(list(av))  # type: ignore[call-overload]
    if op in _REPEATS:
        lo: int = av[0]  # type: ignore[index]
        return _required(list(av[2])) if lo >= 1 else []  # type: ignore[index]
    if op is C.BRANCH:
        # every path takes one alternative: the union of each one's best set
        best = [_required(list(alt)) for alt in av[1]]  # type: ignore[index]
        if not all(best):
            return []
        return [set().union(*(min(sets, key=_rank) for sets in best))]
    if op is C.IN:
        chars = _class_chars(av)  # type: ignore[arg-type]
        return [chars] if chars else []
    return []  # zero-width assertions, any character, categories: no literal promised


def _class_chars(items: list[tuple[object, object]]) -> set[str] | None:
    """The characters of a small class of plain characters and ranges (`[0-9]`, `[-_]`)."""
    chars: set[str] = set()
    for op, av in items:
        if op is C.LITERAL:
            chars.add(chr(av))  # type: ignore[arg-type]
        elif op is C.RANGE and av[1] - av[0] < _SMALL_CLASS:  # type: ignore[index]
            chars.update(map(chr, range(av[0], av[1] + 1)))  # type: ignore[index]
        else:  # a negated class, a category (`\w`), a wide range
            return None
    return chars if len(chars) <= _SMALL_CLASS else None


def _children(op: object, av: object) -> list[list[tuple[object, object]]]:
    if op is C.SUBPATTERN:
        return [list(av[3])]  # type: ignore[index]
    if op is C.ATOMIC_GROUP:
        return [list(av)]  # type: ignore[call-overload]
    if op in _REPEATS:
        return [list(av[2])]  # type: ignore[index]
    if op is C.BRANCH:
        return [list(alt) for alt in av[1]]  # type: ignore[index]
    if op in (C.ASSERT, C.ASSERT_NOT):
        return [list(av[1])]  # type: ignore[index]
    return []


def _reach(items: list[tuple[object, object]]) -> int:
    """Characters past a position that a lookahead inside `items` may read."""
    most = 0
    for op, av in items:
        if op in (C.ASSERT, C.ASSERT_NOT) and av[0] > 0:  # type: ignore[index]
            sub = av[1]  # type: ignore[index]
            most = max(most, sub.getwidth()[1] + _reach(list(sub)))
        else:
            most = max([most, *(_reach(child) for child in _children(op, av))])
    return most


def _scoped_caseless(items: list[tuple[object, object]]) -> bool:
    """A group in `items` turns IGNORECASE on (`(?i:...)`)."""
    for op, av in items:
        if op is C.SUBPATTERN and av[1] & re.IGNORECASE:  # type: ignore[index]
            return True
        if any(_scoped_caseless(child) for child in _children(op, av)):
            return True
    return False


def _bounded(items: list[tuple[object, object]]) -> bool:
    for op, av in items:
        if op in _UNKNOWN:
            return False
        if not all(_bounded(child) for child in _children(op, av)):
            return False
    return True
