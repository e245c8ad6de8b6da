"""Where a text's hidden code points and combining marks are, found by `re` (pure).

`is_hidden(ch)` says whether a code point shows nothing (or reorders what is
shown) on its own: format, control, line and paragraph separator code points
(not tab, newline, carriage return) and the default-ignorable fillers listed in
`EXTRA`. `hidden_class(text)` is a compiled class that matches exactly those
in `text` (None: it holds none); `drop_marks(text)` removes the combining
marks (categories Mn, Mc, Me).

When the running `unicodedata` has the Unicode version of `unicode_tables`,
both are one regular expression over the text, built once. Under another
version `unicodedata` is asked about each distinct character of the text that
is not a letter or a digit (no hidden code point and no mark is one; a test
checks it over every code point): the same answers, more slowly.
"""

from __future__ import annotations

import bisect
import re
import unicodedata

from bridge.screening import unicode_tables

# Default_Ignorable_Code_Point and fillers that render as nothing, beyond the
# format (Cf), control (Cc) and separator (Zl, Zp) categories.
EXTRA = (
    (0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
    (0x2065, 0x2065), (0x2800, 0x2800), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)  # fmt: skip
_EXTRA_START = [a for a, _ in EXTRA]
ALLOWED_CONTROLS = frozenset("\t\n\r")
_CATEGORIES = frozenset(("Cf", "Cc", "Zl", "Zp"))


def in_ranges(ranges: tuple[tuple[int, int], ...], starts: list[int], cp: int) -> bool:
    i = bisect.bisect_right(starts, cp) - 1
    return i >= 0 and ranges[i][0] <= cp <= ranges[i][1]


def is_hidden(ch: str) -> bool:
    """A code point that shows nothing (or reorders what is shown) on its own."""
    if ch in ALLOWED_CONTROLS:
        return False
    return unicodedata.category(ch) in _CATEGORIES or in_ranges(EXTRA, _EXTRA_START, ord(ch))


def _class(ranges: list[tuple[int, int]]) -> str:
    return "[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges) + "]"


def merged(cps: list[int]) -> list[tuple[int, int]]:
    """Sorted code points as ranges of consecutive ones."""
    out: list[tuple[int, int]] = []
    for cp in cps:
        if out and cp == out[-1][1] + 1:
            out[-1] = (out[-1][0], cp)
        else:
            out.append((cp, cp))
    return out


def _without_allowed(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    allowed = sorted(map(ord, ALLOWED_CONTROLS))
    cps = [cp for a, b in ranges for cp in range(a, b + 1) if cp not in allowed]
    return merged(sorted(set(cps)))


_STATIC = unicodedata.unidata_version == unicode_tables.UNIDATA_VERSION
# every hidden code point of `unicode_tables`' Unicode version, as ranges (the vault
# masker reads a value through them: bridge/loadout/mask.py)
HIDDEN_RANGES = tuple(_without_allowed([*unicode_tables.HIDDEN_CATEGORIES, *EXTRA]))
_ALL_HIDDEN = re.compile(_class(list(HIDDEN_RANGES)))  # used only when _STATIC
_BMP_MARKS = re.compile(_class([r for r in unicode_tables.MARKS if r[1] <= 0xFFFF]))
# a code point outside the BMP first (one range: `re` skips ahead to it), then which
_ASTRAL_MARKS = re.compile(
    "[\U00010000-\U0010ffff](?<=" + _class([r for r in unicode_tables.MARKS if r[0] > 0xFFFF]) + ")"
)
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_NON_WORD = re.compile(r"\W")
_EXTRA_CLASS = re.compile(_class(list(EXTRA)))


def hidden_class(text: str) -> re.Pattern[str] | None:
    """A class that matches exactly the hidden code points of `text` (None: it has none)."""
    if _STATIC:
        return _ALL_HIDDEN if _ALL_HIDDEN.search(text) else None
    return _hidden_class_asked(text)


def _hidden_class_asked(text: str) -> re.Pattern[str] | None:
    """`hidden_class` by asking `unicodedata` about the text's distinct non-word characters."""
    distinct = "".join(set(text))
    maybe = _NON_WORD.findall(distinct)
    found = {c for c, cat in zip(maybe, map(unicodedata.category, maybe), strict=True)
             if cat in _CATEGORIES}  # fmt: skip
    found.update(_EXTRA_CLASS.findall(distinct))
    found.difference_update(ALLOWED_CONTROLS)
    return re.compile(_class(merged(sorted(map(ord, found))))) if found else None


def drop_marks(text: str) -> str:
    """`text` without its combining marks."""
    if not _STATIC:
        return _drop_marks_asked(text)
    text = _BMP_MARKS.sub("", text)
    return _ASTRAL_MARKS.sub("", text) if _ASTRAL.search(text) else text


def _drop_marks_asked(text: str) -> str:
    """`drop_marks` by asking `unicodedata` about the text's distinct non-word characters."""
    maybe = _NON_WORD.findall("".join(set(text)))
    marks = [c for c, cat in zip(maybe, map(unicodedata.category, maybe), strict=True)
             if cat[0] == "M"]  # fmt: skip
    return text.translate(dict.fromkeys(map(ord, marks))) if marks else text
