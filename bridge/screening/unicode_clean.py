"""Invisible code points, NFKC and the skeleton the injection screen reads (pure functions).

`invisible(text)` lists the default-ignorable, format, control and filler code
points that are not part of a valid emoji sequence (ZWJ sequences, keycaps,
presentation selectors, subdivision-flag tag sequences) or a ZWJ/ZWNJ between
two letters of a script that joins (Arabic, Indic). `clean(text)` is NFKC with
those removed: what the loadout stores. `skeleton(text)` is what the injection
screen reads: clean, combining marks dropped, look-alike letters folded, casefolded.
Each function is linear and does its per-character work in C (`re`,
`unicodedata.normalize`, `str.translate`): `char_classes` finds the hidden code
points and the marks; Python looks only at the hidden code points found.
"""

from __future__ import annotations

import re
import unicodedata

from bridge.screening.char_classes import drop_marks, hidden_class, in_ranges, is_hidden

__all__ = ["clean", "describe", "describe_found", "invisible", "is_hidden", "is_pictographic",
           "skeleton", "skeleton_of_clean", "strip_invisible"]  # fmt: skip

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


def is_pictographic(cp: int) -> bool:
    return in_ranges(_PICT, _PICT_START, cp)


def _script(ch: str) -> str:
    return unicodedata.name(ch, "").split(" ", 1)[0]


def _joins(before: str, after: str) -> bool:
    """ZWJ/ZWNJ between two letters or marks of one script that uses them."""
    return bool(before and after) and _script(before) == _script(after) in _JOINING_SCRIPTS


def _emoji_end(cp: int) -> bool:
    return is_pictographic(cp) or 0x1F3FB <= cp <= 0x1F3FF or cp in (_VS16, _KEYCAP)


_ASCII_HIDDEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CONFUSABLE = re.compile("[" + "".join(map(chr, _CONFUSABLES)) + "]")


def invisible(text: str) -> list[int]:
    """Indices of hidden code points that no valid emoji sequence or joining script explains."""
    if text.isascii():  # only control characters can hide in ASCII
        return [m.start() for m in _ASCII_HIDDEN.finditer(text)]
    hidden = hidden_class(text)
    if hidden is None:
        return []
    out: list[int] = []
    n = len(text)
    tag_run = False  # inside 1F3F4 + tag letters, waiting for the cancel tag
    last = -2  # index of the hidden code point looked at before this one
    for m in hidden.finditer(text):
        i = m.start()
        if tag_run and i != last + 1:  # a shown character ended the tag run unfinished
            out.extend(range(last + 1 - _tag_len(text, last + 1), last + 1))
            tag_run = False
        last = i
        cp = ord(text[i])
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
        if not _explained(text, i, cp, prev, nxt):
            out.append(i)
    if tag_run:  # a tag run that never met its cancel tag
        out.extend(range(last + 1 - _tag_len(text, last + 1), last + 1))
    return out


def _explained(text: str, i: int, cp: int, prev: int, nxt: int) -> bool:
    """A selector, joiner or non-joiner that a valid sequence around index `i` explains."""
    if cp in (_VS15, _VS16) and (
        is_pictographic(prev) or (chr(prev) in "0123456789#*" and nxt == _KEYCAP and prev)
    ):
        return True
    if cp == _ZWJ and _emoji_end(prev) and is_pictographic(nxt):
        return True
    return cp in (_ZWJ, _ZWNJ) and _joins(text[i - 1] if i else "", text[i + 1] if nxt else "")


def _tag_len(text: str, end: int) -> int:
    k = end
    while k > 0 and 0xE0020 <= ord(text[k - 1]) <= 0xE007E:
        k -= 1
    return end - k


def describe(text: str, limit: int = 3) -> str:
    """`U+200B ZERO WIDTH SPACE, ...`: names of the hidden code points found (never the text)."""
    return describe_found(text, invisible(text), limit)


def describe_found(text: str, found: list[int], limit: int = 3) -> str:
    """`describe` of the code points at `found` (what `invisible(text)` returned)."""
    seen: list[str] = []
    for i in found:
        ch = text[i]
        label = f"U+{ord(ch):04X} {unicodedata.name(ch, 'control')}"
        if label not in seen:
            seen.append(label)
    more = f" and {len(seen) - limit} more" if len(seen) > limit else ""
    return ", ".join(seen[:limit]) + more


def strip_invisible(text: str) -> str:
    """Hidden code points removed; a line or paragraph separator becomes a space."""
    drop = invisible(text)
    if not drop:
        return text
    out: list[str] = []
    start = 0
    for i in sorted(set(drop)):
        out.append(text[start:i])
        if unicodedata.category(text[i]) in ("Zl", "Zp"):
            out.append(" ")
        start = i + 1
    out.append(text[start:])
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
    bare = drop_marks(unicodedata.normalize("NFKD", cleaned))
    if _CONFUSABLE.search(bare):
        bare = bare.translate(_CONFUSABLES)
    return unicodedata.normalize("NFKC", bare).casefold()
