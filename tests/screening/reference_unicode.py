"""The per-character Unicode functions as they were before the fast rewrite: the oracle.

`bridge/screening/unicode_clean.py` (main at 6f2d8de) looped over every code point
in Python. This copy is kept only so tests/screening/test_fast_equivalence.py
can check that the rewrite gives the same output on every input it tries; it
is not used by the daemon. Do not "fix" it: a difference is a test failure.
Its code point tables are the specification both follow, not the algorithm: a
deliberate change of what counts as hidden is made in both (session 41: U+2065,
unassigned but Default_Ignorable, added to `_EXTRA` and `char_classes.EXTRA`).
"""

# ruff: noqa
from __future__ import annotations

import bisect
import re
import unicodedata

# Extended_Pictographic (Unicode emoji-data.txt), as (first, last) ranges.
_PICT = (
    (0x00A9, 0x00A9), (0x00AE, 0x00AE), (0x203C, 0x203C), (0x2049, 0x2049),
    (0x2122, 0x2122), (0x2139, 0x2139), (0x2194, 0x2199), (0x21A9, 0x21AA),
    (0x231A, 0x231B), (0x2328, 0x2328), (0x2388, 0x2388), (0x23CF, 0x23CF),
    (0x23E9, 0x23F3), (0x23F8, 0x23FA), (0x24C2, 0x24C2), (0x25AA, 0x25AB),
    (0x25B6, 0x25B6), (0x25C0, 0x25C0), (0x25FB, 0x25FE), (0x2600, 0x2605),
    (0x2607, 0x2612), (0x2614, 0x2685), (0x2690, 0x2705), (0x2708, 0x2712),
    (0x2714, 0x2714), (0x2716, 0x2716), (0x271D, 0x271D), (0x2721, 0x2721),
    (0x2728, 0x2728), (0x2733, 0x2734), (0x2744, 0x2744), (0x2747, 0x2747),
    (0x274C, 0x274C), (0x274E, 0x274E), (0x2753, 0x2755), (0x2757, 0x2757),
    (0x2763, 0x2767), (0x2795, 0x2797), (0x27A1, 0x27A1), (0x27B0, 0x27B0),
    (0x27BF, 0x27BF), (0x2934, 0x2935), (0x2B05, 0x2B07), (0x2B1B, 0x2B1C),
    (0x2B50, 0x2B50), (0x2B55, 0x2B55), (0x3030, 0x3030), (0x303D, 0x303D),
    (0x3297, 0x3297), (0x3299, 0x3299), (0x1F000, 0x1F0FF), (0x1F10D, 0x1F10F),
    (0x1F12F, 0x1F12F), (0x1F16C, 0x1F171), (0x1F17E, 0x1F17F), (0x1F18E, 0x1F18E),
    (0x1F191, 0x1F19A), (0x1F1AD, 0x1F1E5), (0x1F201, 0x1F20F), (0x1F21A, 0x1F21A),
    (0x1F22F, 0x1F22F), (0x1F232, 0x1F23A), (0x1F23C, 0x1F23F), (0x1F249, 0x1F3FA),
    (0x1F400, 0x1F53D), (0x1F546, 0x1F64F), (0x1F680, 0x1F6FF), (0x1F774, 0x1F77F),
    (0x1F7D5, 0x1F7FF), (0x1F80C, 0x1F80F), (0x1F848, 0x1F84F), (0x1F85A, 0x1F85F),
    (0x1F888, 0x1F88F), (0x1F8AE, 0x1F8FF), (0x1F90C, 0x1F93A), (0x1F93C, 0x1F945),
    (0x1F947, 0x1FAFF), (0x1FC00, 0x1FFFD),
)  # fmt: skip
_PICT_START = [a for a, _ in _PICT]

# Default_Ignorable_Code_Point and fillers that render as nothing, beyond the
# format (Cf), control (Cc) and separator (Zl, Zp) categories.
_EXTRA = (
    (0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
    (0x2065, 0x2065), (0x2800, 0x2800), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)  # fmt: skip
_ALLOWED_CONTROLS = frozenset("\t\n\r")
_ZWJ, _ZWNJ, _VS15, _VS16, _KEYCAP = 0x200D, 0x200C, 0xFE0E, 0xFE0F, 0x20E3
_BLACK_FLAG, _CANCEL_TAG = 0x1F3F4, 0xE007F
_JOINING_SCRIPTS = frozenset(
    [
        "ARABIC",
        "SYRIAC",
        "NKO",
        "MANDAIC",
        "DEVANAGARI",
        "BENGALI",
        "GURMUKHI",
        "GUJARATI",
        "ORIYA",
        "TAMIL",
        "TELUGU",
        "KANNADA",
        "MALAYALAM",
        "SINHALA",
        "MONGOLIAN",
    ]
)
# Latin look-alikes from Cyrillic and Greek that survive NFKC.
_CONFUSABLES = str.maketrans(
    "аеорсухіјѕԁɡοαινρτκмнвАЕОРСХІЈЅΑΒΕΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdgoaivptkmhbAEOPCXIJSABEHIKMNOPTYX",
)


def _in(ranges: tuple[tuple[int, int], ...], starts: list[int], cp: int) -> bool:
    i = bisect.bisect_right(starts, cp) - 1
    return i >= 0 and ranges[i][0] <= cp <= ranges[i][1]


_EXTRA_START = [a for a, _ in _EXTRA]


def is_pictographic(cp: int) -> bool:
    return _in(_PICT, _PICT_START, cp)


def is_hidden(ch: str) -> bool:
    """A code point that shows nothing (or reorders what is shown) on its own."""
    if ch in _ALLOWED_CONTROLS:
        return False
    return unicodedata.category(ch) in ("Cf", "Cc", "Zl", "Zp") or _in(
        _EXTRA, _EXTRA_START, ord(ch)
    )


def _script(ch: str) -> str:
    return unicodedata.name(ch, "").split(" ", 1)[0]


def _joins(before: str, after: str) -> bool:
    """ZWJ/ZWNJ between two letters or marks of one script that uses them."""
    return bool(before and after) and _script(before) == _script(after) in _JOINING_SCRIPTS


def _emoji_end(cp: int) -> bool:
    return is_pictographic(cp) or 0x1F3FB <= cp <= 0x1F3FF or cp in (_VS16, _KEYCAP)


_ASCII_HIDDEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def invisible(text: str) -> list[int]:
    """Indices of hidden code points that no valid emoji sequence or joining script explains."""
    if text.isascii():  # only control characters can hide in ASCII
        return [m.start() for m in _ASCII_HIDDEN.finditer(text)]
    out: list[int] = []
    n = len(text)
    tag_run = False  # inside 1F3F4 + tag letters, waiting for the cancel tag
    for i, ch in enumerate(text):
        if not is_hidden(ch):
            if tag_run:  # a tag run that never met its cancel tag
                out.extend(range(i - _tag_len(text, i), i))
            tag_run = False
            continue
        cp = ord(ch)
        prev = ord(text[i - 1]) if i else 0
        nxt = ord(text[i + 1]) if i + 1 < n else 0
        if 0xE0020 <= cp <= 0xE007E and (prev == _BLACK_FLAG or tag_run):
            tag_run = True
            continue
        if cp == _CANCEL_TAG and tag_run:
            tag_run = False
            continue
        if tag_run:
            out.extend(range(i - _tag_len(text, i), i))
        tag_run = False
        if cp in (_VS15, _VS16) and (
            is_pictographic(prev) or (chr(prev) in "0123456789#*" and nxt == _KEYCAP and prev)
        ):
            continue
        if cp == _ZWJ and _emoji_end(prev) and is_pictographic(nxt):
            continue
        if cp in (_ZWJ, _ZWNJ) and _joins(text[i - 1] if i else "", text[i + 1] if nxt else ""):
            continue
        out.append(i)
    if tag_run:
        out.extend(range(n - _tag_len(text, n), n))
    return out


def _tag_len(text: str, end: int) -> int:
    k = end
    while k > 0 and 0xE0020 <= ord(text[k - 1]) <= 0xE007E:
        k -= 1
    return end - k


def describe(text: str, limit: int = 3) -> str:
    """`U+200B ZERO WIDTH SPACE, ...`: names of the hidden code points found (never the text)."""
    seen: list[str] = []
    for i in invisible(text):
        ch = text[i]
        label = f"U+{ord(ch):04X} {unicodedata.name(ch, 'control')}"
        if label not in seen:
            seen.append(label)
    more = f" and {len(seen) - limit} more" if len(seen) > limit else ""
    return ", ".join(seen[:limit]) + more


def strip_invisible(text: str) -> str:
    """Hidden code points removed; a line or paragraph separator becomes a space."""
    drop = set(invisible(text))
    if not drop:
        return text
    out = []
    for i, ch in enumerate(text):
        if i not in drop:
            out.append(ch)
        elif unicodedata.category(ch) in ("Zl", "Zp"):
            out.append(" ")
    return "".join(out)


def clean(text: str) -> str:
    """What the loadout stores: NFKC, hidden code points outside emoji sequences removed."""
    if text.isascii():  # NFKC leaves ASCII as it is
        return _ASCII_HIDDEN.sub("", text)
    return strip_invisible(unicodedata.normalize("NFKC", text))


def skeleton(text: str) -> str:
    """What the injection screen reads: clean, marks dropped, look-alikes folded, casefolded."""
    return skeleton_of_clean(clean(text))


def skeleton_of_clean(cleaned: str) -> str:
    """`skeleton` of a text that is already `clean` (saves a second pass)."""
    if cleaned.isascii():
        return cleaned.lower()
    base = unicodedata.normalize("NFKD", cleaned)
    bare = "".join(c for c in base if not unicodedata.category(c).startswith("M"))
    return unicodedata.normalize("NFKC", bare.translate(_CONFUSABLES)).casefold()
