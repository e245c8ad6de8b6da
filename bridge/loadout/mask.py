"""Masking vault values, in every common spelling, out of text.

`Masker(secrets)` knows every spelling of each value (`spellings`): the value
itself, its JSON and Python string escapes (also with `/` as `\\/`, as PHP's
`json_encode` writes it), HTML escapes, URL-encoding (`quote`, `quote_plus`),
hex, base64 standard and urlsafe with and without padding, and the part of a
base64 text that only the value decides when the value sits inside a longer
encoded blob (HTTP Basic auth `user:value`, say) at each of the three byte
alignments. A server escapes a value in more ways than any list names, so
`Matcher` finds each spelling in any letter case, in the text as it is and in
its `canonical` view: one layer of common escapes decoded (`\\/`,
`\\uXXXX`, `\\xHH`, `\\n`..., HTML/XML entities `&#43;` `&#x2F;` `&amp;`,
ASCII `%2f`/`%2F`, a UTF-8 character's `%EF%BC%B2`), with the offsets back
to the text, and replaces the original span, escapes and all; overlapping
matches merge into one span. Fullwidth ASCII (U+FF01-U+FF5E) reads as ASCII,
and so do the other compatibility forms NFKC makes ASCII, one character at a
time (`_Folded`: mathematical, circled and parenthesized letters and digits,
superscripts, ligatures, small forms, every code point whose NFKC is ASCII;
every space character reads as U+0020, and a value's own spaces match any run
of spaces, tabs and line breaks, while a space put inside a value that has none
is ordinary text, as U+0020 is); an escape of an invisible character decodes
to nothing, and a JSON surrogate pair to its character; a value wrapped over lines
or broken by characters that show nothing (the screen's hidden code points:
a soft hyphen, zero-width spaces and joiners, bidi controls, line and
paragraph separators, a BOM...) is read joined (`_Joined`).
`mask(text)` replaces each with `[vault:NAME]` and returns `Masked`
(`bridge.types.masked`): the one type the ways out of roost accept, so this
module is the one masking point. `also(texts)` is the same masker plus the
secrets a screen refused to keep in those texts (`bridge.loadout.refused`),
each spelling replaced by `[refused secret]`: the turn that met a refusal
stores them masked. Masked text is also valid Unicode: a lone surrogate (from
a tool's result, an MCP server's JSON) becomes U+FFFD (`valid_unicode`), so no
store refuses it.

`split` serves text that arrives in pieces (`stream`, with
`bridge.core.masks.MaskedDeltas`): it holds back the longest tail that could
be the start of some spelling, in the text or in its decoded view, and any
escape that more text could complete (found with the Knuth-Morris-Pratt
failure table: the work per piece is linear in the held tail, which is never
longer than the longest spelling); the tail is also read with its breaks and
invisible characters removed, spaces and all (a passphrase with a zero-width
space inside); the held tail never starts inside an
escape, so it decodes later as it does in the whole text, and a value split
across two pieces is never sent half-way.

Which values to mask for a tenant: all of that tenant's vault values (a tool
may obtain or echo any of them), not only those a tool declared.
"""

from __future__ import annotations

import base64
import bisect
import html
import html.entities
import json
import re
import sys
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from urllib.parse import quote, quote_plus

from bridge.core.masks import MaskedDeltas
from bridge.loadout.refused import secret_spans
from bridge.screening.char_classes import HIDDEN_RANGES, merged
from bridge.types.backend import ChatMessage, ToolCallRequest
from bridge.types.cp1252 import CP1252_TABLE, read_1252
from bridge.types.masked import Masked
from bridge.types.messages import valid_unicode

MIN_SECRET_CHARS = 4
REFUSED_MARK = "[refused secret]"
_ESCAPE = re.compile(r"%[0-9A-F]{2}")
# One server-side escape of one character, by kind (the group): JSON/JS `\uXXXX` (a
# surrogate pair's two of them as one: `json.dumps` of a character past U+FFFF),
# Python `\xHH`, a backslash escape (PHP's JSON writes `/` as `\/`), an HTML/XML
# numeric or named entity (`&#43;`, `&#x2F;`, `&amp;`), an ASCII %XX in either case, the
# %XX bytes of one UTF-8 character (`%EF%BC%B2`, a fullwidth "R"), Python's `\UXXXXXXXX`
# (`ascii()` or `repr` of a character past U+FFFF: math-bold letters, a tag).
_ESCAPES = re.compile(
    r"\\u(?:([dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})|([0-9a-fA-F]{4}))"
    r"|\\x([0-9a-fA-F]{2})|\\([\"\\/'bfnrt])"
    r"|&#([0-9]{1,7});|&#[xX]([0-9a-fA-F]{1,6});|&([A-Za-z][A-Za-z0-9]{1,31};)"
    r"|%(?:([0-7][0-9a-fA-F])"
    r"|([cdCD][0-9a-fA-F]%[89abAB][0-9a-fA-F]|[eE][0-9a-fA-F](?:%[89abAB][0-9a-fA-F]){2}"
    r"|[fF][0-7](?:%[89abAB][0-9a-fA-F]){3}))"
    r"|\\U(00(?:0[0-9a-fA-F]|10)[0-9a-fA-F]{4})"
)
# The start of an escape that more text could complete (held back when streaming).
_PARTIAL = re.compile(
    r"(?:\\u[dD][89abAB][0-9a-fA-F]{2}(?:\\u?[0-9a-fA-F]{0,3})?"
    r"|\\(?:u[0-9a-fA-F]{0,3}|x[0-9a-fA-F]?|U[0-9a-fA-F]{0,7})?"
    r"|&(?:#[xX]?[0-9a-fA-F]{0,6}|[A-Za-z][A-Za-z0-9]{0,31})?|%[0-9a-fA-F]?"
    r"|%[c-fC-F][0-9a-fA-F](?:%[89abAB][0-9a-fA-F]){0,2}(?:%[89abAB]?)?)\Z"
)
_BACKSLASHED = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
# A line break between two non-blank characters (with the line's trailing and the next
# line's leading blanks: PEM indented in YAML), or soft hyphens (U+00AD, PDF hyphenation):
# what wraps a base64 blob (MIME, PEM, the `base64` CLI) or a long token.
_LINE_BREAK = r"[ \t]*+\r?\n[ \t]*+"
# Characters that show nothing and may sit inside a value: the screen's hidden code points
# (`bridge.screening.char_classes`: the format, control and line/paragraph separator
# categories and the fillers that render as nothing, a superset of Unicode's
# Default_Ignorable set: soft hyphen, zero-width spaces and joiners, bidi marks and
# controls, variation selectors, Hangul fillers, a BOM, tags), past ASCII (tab, newline
# and ASCII's other controls are the text's own). Web pages and chat apps insert some to
# break long words or to set a direction; a copy keeps them. Read like a soft hyphen:
# removed in `_Joined`.
_IGNORABLE = tuple((max(a, 0x80), b) for a, b in HIDDEN_RANGES if b >= 0x80)


def _class_body(ranges: Iterable[tuple[int, int]]) -> str:
    return "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in ranges)


_HIDDEN_CHARS = _class_body(_IGNORABLE)


# Other compatibility forms of ASCII (what NFKC makes of each one character, where that is
# ASCII): mathematical letters and digits (bold, italic, script, fraktur, double-struck,
# monospace: U+1D400-U+1D7FF), circled and parenthesized letters and digits (U+2460-U+24FF,
# U+1F100-U+1F1FF), superscripts and subscripts, modifier letters, letterlike symbols and
# Roman numerals, ligatures ("\ufb01" is "fi"), squared Latin abbreviations, segmented
# digits, small and vertical forms (U+FE10-U+FE6B: "\ufe63" is "-"), the long s; and every
# space character (Unicode's Zs: no-break, thin, ideographic...) as U+0020. Some stand for
# more than one character ("\u2474" is "(1)", "\u2026" "..."): `_Folded` maps those back
# one by one. The ranges hold every code point whose NFKC is ASCII (but fullwidth ASCII,
# read apart: `_HALFWIDTH`), found once from `unicodedata` with gaps of up to 64 closed;
# tests/loadout checks them against every code point of the running Python's Unicode.
_COMPAT_BLOCKS = (
    (0x00A0, 0x00BA), (0x0132, 0x0133), (0x017F, 0x017F), (0x01C7, 0x01F3), (0x02B0, 0x02E3),
    (0x037E, 0x037E), (0x1680, 0x1680), (0x1D2C, 0x1DBB), (0x1FEF, 0x20A8), (0x2100, 0x217F),
    (0x2460, 0x24EA), (0x2A74, 0x2A76), (0x2C7C, 0x2C7D), (0x3000, 0x3000), (0x3250, 0x325F),
    (0x32B1, 0x32CF), (0x3371, 0x33FF), (0xA7F2, 0xA7F4), (0xFB00, 0xFB29), (0xFE10, 0xFE6B),
    (0x107A5, 0x107A5), (0x1D400, 0x1D6A3), (0x1D7CE, 0x1D7FF), (0x1F100, 0x1F190),
    (0x1FBF0, 0x1FBF9),
)  # fmt: skip


def _compat_table() -> dict[int, str]:
    """Each code point of `_COMPAT_BLOCKS` that NFKC makes ASCII, with that ASCII; each
    space character, with U+0020."""
    table: dict[int, str] = {}
    for first, last in _COMPAT_BLOCKS:
        for code in range(first, last + 1):
            char = chr(code)
            if unicodedata.category(char) == "Zs":
                table[code] = " "
                continue
            nfkc = unicodedata.normalize("NFKC", char)
            if nfkc != char and nfkc.isascii() and nfkc.isprintable():
                table[code] = nfkc
    return table


_COMPAT = _compat_table()
_COMPAT_RANGES = merged(sorted(_COMPAT))


def _run_of(ranges: Iterable[tuple[int, int]]) -> re.Pattern[str]:
    """A run of characters of `ranges`, one class first (`re` skips ahead to a class; to
    `[...]+` it steps a character at a time, four times slower)."""
    body = _class_body(ranges)
    return re.compile(f"[{body}][{body}]*")


def _astral_of(ranges: Iterable[tuple[int, int]]) -> re.Pattern[str]:
    """A character of `ranges` past U+FFFF: any such character first (one range: `re` skips
    ahead to it), then which (a class with characters past U+FFFF scans six times slower)."""
    body = _class_body(r for r in ranges if r[0] >= 0x10000)
    return re.compile(f"[\U00010000-\U0010ffff](?<=[{body}])")


def _compat_run(m: re.Match[str]) -> str:
    return m.group().translate(_COMPAT)


_COMPAT_BMP = _run_of(r for r in _COMPAT_RANGES if r[1] < 0x10000)
_COMPAT_ANY = _run_of(_COMPAT_RANGES)  # slower: only in a text holding one past U+FFFF
_COMPAT_ASTRAL = _astral_of(_COMPAT_RANGES)
_COMPAT_CHAR_BMP = re.compile(f"[{_class_body(r for r in _COMPAT_RANGES if r[1] < 0x10000)}]")
_COMPAT_CHAR_ANY = re.compile(f"[{_class_body(_COMPAT_RANGES)}]")
_REPLACES = 8  # up to so many kinds of them in a text: one `str.replace` each

_INVISIBLE = f"[{_HIDDEN_CHARS}]"
# Looked for apart (a pattern's scan is several times slower with characters past U+FFFF
# in its class, or with an alternative): those of the Basic Multilingual Plane, any
# fullwidth character and the compatibility forms in one class, the others only in a text
# that may hold them.
_SPECIAL_BMP = re.compile(
    f"[{_class_body(r for r in _IGNORABLE if r[1] < 0x10000)}\uff01-\uff5e"
    f"{_class_body(r for r in _COMPAT_RANGES if r[1] < 0x10000)}]"
)
# the special characters but fullwidth ones: looked for once in a text that holds one
_OTHER_BMP = re.compile(
    f"[{_class_body(r for r in (*_IGNORABLE, *_COMPAT_RANGES) if r[1] < 0x10000)}]"
)
_HIDDEN_BMP = re.compile(f"[{_class_body(r for r in _IGNORABLE if r[1] < 0x10000)}]")
_HIDDEN_ASTRAL = _astral_of(_IGNORABLE)
_SPECIAL_ASTRAL = _astral_of((*_IGNORABLE, *_COMPAT_RANGES))
_STR_HEAD = sys.getsizeof("\U00010000") - 8  # a non-ASCII str's size less its characters'


def _may_be_astral(text: str) -> bool:
    """Whether non-ASCII `text` may hold a character past U+FFFF, at once: CPython keeps a
    str in 1, 2 or 4 bytes a character (PEP 393), the fewest its widest character needs,
    so only a 4-byte one can (`sys.getsizeof`: the head, then len + 1 characters)."""
    return sys.getsizeof(text) - _STR_HEAD >= 4 * (len(text) + 1)


_BREAK = rf"(?:{_INVISIBLE}++(?:{_LINE_BREAK})?|{_LINE_BREAK}){_INVISIBLE}*+"
_BREAKS = re.compile(_BREAK)
# Where a spelling may be wrapped: a line break after `_WRAPPED` or more word or base64
# characters and before four more. A literal first, so found at C speed; a prose line
# rarely ends in such a 12-character token (1 MB of the docs: about 50 places).
_WRAPPED = 12
_HIDDEN = re.compile(_INVISIBLE)
_INVISIBLES = re.compile(f"{_INVISIBLE}+")
# how much farther back a stream looks for the start of a value when invisible characters
# are in its tail (several between each two of its letters: 8 in tests/loadout)
HIDDEN_REACH = 8


def _holds(text: str, bmp: re.Pattern[str], astral: re.Pattern[str]) -> bool:
    """Whether `text` holds a character `bmp` or `astral` finds (an ASCII text at once; the
    astral scan only in a text that may hold a character past U+FFFF)."""
    if text.isascii():
        return False
    if bmp.search(text) is not None:
        return True
    return _may_be_astral(text) and astral.search(text) is not None


def _has_hidden(text: str) -> bool:
    """Whether `text` holds an `_INVISIBLE` character."""
    return _holds(text, _HIDDEN_BMP, _HIDDEN_ASTRAL)


def _has_special(text: str) -> bool:
    """Whether `text` holds an `_INVISIBLE`, a fullwidth or a compatibility character (`_COMPAT`)
    (one scan mostly)."""
    return _holds(text, _SPECIAL_BMP, _SPECIAL_ASTRAL)


_SPACED = re.compile(r"[ \t]\r?\n|\n[ \t]")  # a line break `_BREAKS` takes blanks with
# a line break (raw or escaped: JSON's `\n`) right after an escaped invisible character,
# with the blanks around it: a wrapped line's end, read away with it (`_View`); or the
# text's end, where a stream's next piece may bring one
_WRAP_AFTER = re.compile(r"[ \t]*(?:\r?\n|\\r\\n|\\n|\r?\Z)[ \t]*")
_WORD = r"[\w+/=-]"
_EDGE = re.compile(
    rf"\n(?:(?<={_WORD}{{{_WRAPPED}}}\n)|(?<={_WORD}{{{_WRAPPED}}}\r\n))[ \t]*+{_WORD}{{4}}"
)
_JOIN = "\0"  # between two chains in the joined view: no form holds it
# a value's own spaces: any run of blanks and line breaks (a passphrase wrapped, tabbed)
# blanks a value's own space may be written as: also VT and FF, and NEL, U+2028 and U+2029
# (hidden characters too: `_Joined` reads them away, joining the words around them)
_BLANK = "[ \t\r\n\x0b\x0c\x85\u2028\u2029]+"
_BLANKS = re.compile(_BLANK)
_LINE_SEPARATORS = str.maketrans("\x85\u2028\u2029", "   ")
_SPACES = re.compile(" +")


def _spelled(form: str) -> str:
    """A pattern of `form` (lower-cased), its spaces matching any run of `_BLANKS`."""
    if " " not in form:
        return re.escape(form)
    return _BLANK.join(re.escape(part) for part in _SPACES.split(form))


def _unsqueezed(text: str, i: int) -> int:
    """Where the character at `i` of `text` with each run of `_BLANKS` as one space is."""
    removed = 0
    for m in _BLANKS.finditer(text):
        if m.start() - removed >= i:
            break
        removed += m.end() - m.start() - 1
    return i + removed


def _aligned(data: bytes, offset: int, encode: Callable[[bytes], bytes]) -> str:
    """Base64 characters fully decided by `data` when it starts `offset` bytes into a blob."""
    text = encode(b"\0" * offset + data).decode("ascii")
    first = -(-offset * 8 // 6)
    last = (offset + len(data)) * 8 // 6
    return text[first:last]


def _mixed_1252(value: str) -> str:
    """`value`'s Windows-1252 bytes read as the text rule reads a mixed file: UTF-8 where
    they are valid UTF-8 ("ß§" is one character), each other byte as Windows-1252; the
    value itself when it has no Windows-1252 bytes."""
    try:
        data = value.encode("cp1252")
    except UnicodeEncodeError:
        return value
    escaped = data.decode("utf-8", "surrogateescape")
    return "".join(
        CP1252_TABLE[ord(c) - 0xDC00] if "\udc80" <= c <= "\udcff" else c for c in escaped
    )


def spellings(value: str) -> set[str]:
    """The value and its common encodings, each at least MIN_SECRET_CHARS long.

    The masker also matches each of them in any letter case and through one
    layer of the escapes `canonical` decodes, so these are only the encodings
    that are not character-for-character escapes (base64, hex) plus the
    escaped forms themselves (for a stream, and a text too short to decode).
    """
    data = value.encode("utf-8")
    escaped = json.dumps(value)[1:-1]
    forms = {
        value,
        escaped,
        escaped.replace("/", "\\/"),  # PHP json_encode, some Java/.NET serializers
        json.dumps(value, ensure_ascii=False)[1:-1],
        json.dumps(escaped)[1:-1],  # a JSON text inside a JSON string
        repr(value)[1:-1],
        ascii(value)[1:-1],
        data.hex(),
        html.escape(value),
    }
    for quoted in (quote(value, safe=""), quote(value), quote_plus(value)):
        forms.add(quoted)
        forms.add(_ESCAPE.sub(lambda m: m.group(0).lower(), quoted))
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        full = encode(data).decode("ascii")
        forms.update((full, full.rstrip("=")))
        forms.update(_aligned(data, offset, encode) for offset in range(3))
    if not value.isascii():
        # the same letters composed otherwise (NFD: macOS text, PDF copies), its UTF-8 read
        # as Windows-1252 (a file encoded twice) or as ISO-8859-1 (a tool reading UTF-8 as
        # Latin-1), its Windows-1252 bytes read by the mixed rule (`_mixed_1252`), and
        # upper-cased where that changes its length ("GRÜSSE": `_lower` keeps "ß")
        forms.update(unicodedata.normalize(form, value) for form in ("NFC", "NFD"))
        forms.update((read_1252(data), data.decode("latin-1"), _mixed_1252(value)))
        upper = value.upper()
        if len(upper) != len(value):
            forms.update((upper, unicodedata.normalize("NFD", upper)))
    return {f for f in forms if len(f) >= MIN_SECRET_CHARS}


# Fullwidth forms of ASCII (U+FF01-U+FF5E: East Asian input, a converted copy) read as the
# ASCII they stand for, one character for one, so every offset stays the text's.
_HALFWIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}
_FULLWIDTH_RUN = {
    1: re.compile("[\uff01-\uff5e][\uff01-\uff5e]*"),
    # a run of four or more, or a shorter one next to ASCII or a Latin letter (U+00C0-U+024F,
    # U+1E00-U+1EFF) ("Rt5p\uff2c\uff4d8Qz", "\uff27\uff52\u00fc\u00dfe": a value half
    # converted, an IME's fullwidth letters around accented ones, Vietnamese), or one or two
    # blanks (a space, U+3000, a tab or a line break) away from such a letter or another
    # fullwidth run, or before one or two at the text's end (an IME's
    # "\uff43\uff41\uff54\u3000\uff44\uff4f\uff47" or the same words a line each: a
    # passphrase of short words); CJK prose sets its fullwidth punctuation among CJK
    # characters. A class first (`_run_of`): the run's first character, then what makes the
    # run one
    MIN_SECRET_CHARS: re.compile(
        "[\uff01-\uff5e](?:(?<=[!-~\u00c0-\u024f\u1e00-\u1eff].)[\uff01-\uff5e]*"
        "|(?<=[!-~\u00c0-\u024f\u1e00-\u1eff\uff01-\uff5e][ \t\r\n\u3000].)[\uff01-\uff5e]*"
        "|(?<=[!-~\u00c0-\u024f\u1e00-\u1eff\uff01-\uff5e][ \t\r\n\u3000]{2}.)[\uff01-\uff5e]*"
        "|[\uff01-\uff5e]{3,}"
        "|[\uff01-\uff5e]{0,2}(?=[!-~\u00c0-\u024f\u1e00-\u1eff]"
        "|[ \t\r\n\u3000]{1,2}[!-~\u00c0-\u024f\u1e00-\u1eff\uff01-\uff5e]"
        "|[ \t\r\n\u3000]{0,2}\\Z))"
    ),
}
_SPACE = re.compile(r"[^\S\t\n\v\f\r\x1c-\x1f\x85\u2028\u2029]")  # a space (Zs)
# a short run of fullwidth characters ending a stream's tail (with up to two blanks after it)
_FULLWIDTH_END = re.compile("[\uff01-\uff5e]{1,3}([ \t\r\n\u3000]{0,2})\\Z")
# what a decoded escape stands for, read as ASCII where it is a form of it
_FOLD_CHAR: dict[int, str | int] = {**_HALFWIDTH, **_COMPAT}


def _halfwidth(text: str, run: int = MIN_SECRET_CHARS) -> str:
    """`text` with its runs of `run` or more fullwidth ASCII characters as ASCII (the same
    length: the offsets stay). A text is read with runs of MIN_SECRET_CHARS and shorter runs
    next to ASCII: CJK prose sets its punctuation among CJK characters (，。：「」, a pair at
    most), and a value in fullwidth letters is such a run, or part of one half converted; a
    stream's held tail with every one (`Matcher.open_at`: a value arriving one character at
    a time starts as a lone one)."""
    if text.isascii():
        return text
    pattern = _FULLWIDTH_RUN[run]
    if pattern.search(text) is None:
        return text
    return pattern.sub(lambda m: m.group().translate(_HALFWIDTH), text)


def _edge_readings(form: str) -> set[str]:
    """`form` as a text holding it may read (`_FULLWIDTH_RUN`): its runs of fullwidth
    characters inside as it decides, and a run at either edge, which what is around it in
    the text decides, both kept and read as ASCII (`ねこ１ぴきＡ` at a text's end is read
    `ねこ１ぴきA`)."""
    runs = list(_FULLWIDTH_RUN[1].finditer(form))
    if not runs:
        return set()
    read = _halfwidth(form)
    # a run with only blanks between it and an edge is at that edge too (a value saved
    # with its line break, `\uff21\uff22\u306d\u3053\uff23\uff24\n`)
    edges = [
        r
        for r in {runs[0], runs[-1]}
        if r.start() == 0
        or r.end() == len(form)
        or form[: r.start()].isspace()
        or form[r.end() :].isspace()
    ]
    out = {read}
    for run in edges:
        for text in list(out):
            raw, ascii_ = form[run.start() : run.end()], run.group().translate(_HALFWIDTH)
            for piece in (raw, ascii_):
                out.add(text[: run.start()] + piece + text[run.end() :])
    return out


def _with_left(text: str, at: int) -> int:
    """Where a stream's held tail starts, from `at` on, with what decides how a run of
    fullwidth characters held there is read (`_FULLWIDTH_RUN`): up to three more of its
    characters before `at` (a run of four is read as ASCII), and a fullwidth character and a
    space before the run. At the text's end a run may come next: the same is held."""
    k = at
    if at == len(text) or _is_fullwidth(text[at]):
        while k > 0 and at - k < MIN_SECRET_CHARS - 1 and _is_fullwidth(text[k - 1]):
            k -= 1
    if (
        k >= 2
        and (k == len(text) or _is_fullwidth(text[k]))
        and _is_fullwidth(text[k - 2])
        and _SPACE.match(text, k - 1) is not None
    ):
        k -= 2
    return k


def _is_fullwidth(char: str) -> bool:
    return "\uff01" <= char <= "\uff5e"


def _lower(text: str) -> str:
    """`text` lower-cased one character for one (a character whose lower case is longer stays)."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def _decoded(m: re.Match[str]) -> str | None:
    """The character(s) one escape stands for, or None when it stands for none."""
    kind = m.lastindex
    arg = m.group(kind or 0)
    if kind == 1:  # a surrogate pair
        high, low = int(arg[:4], 16), int(arg[6:], 16)
        return chr(0x10000 + ((high - 0xD800) << 10) + low - 0xDC00)
    if kind == 4:
        return _BACKSLASHED.get(arg, arg)
    if kind == 7:
        return html.entities.html5.get(arg)
    if kind == 9:  # checked UTF-8 (its shape only in `_ESCAPES`): an overlong form is none
        try:
            return bytes.fromhex(arg.replace("%", "")).decode("utf-8")
        except UnicodeDecodeError:
            return None
    code = int(arg, 10 if kind == 5 else 16)
    if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        return None  # a surrogate half: its escaped pair is a spelling of its own
    return chr(code)


class _Back:
    """The way back from a view of a text, where some spans of the text became other
    characters (each one recorded: `at` in the view, `lengths` there, `starts`/`ends` in
    the text), to the text's offsets; the characters between them are the text's."""

    __slots__ = ("at", "ends", "lengths", "starts")

    def __init__(self) -> None:
        self.at: list[int] = []  # where each changed span starts in the view
        self.lengths: list[int] = []  # how many characters it became
        self.starts: list[int] = []  # its span in the text
        self.ends: list[int] = []

    def start(self, i: int) -> int:
        """Where the character at `i` of the view starts in the text."""
        k = bisect.bisect_right(self.at, i) - 1
        if k < 0:
            return i
        if i < self.at[k] + self.lengths[k]:
            return self.starts[k]
        return self.ends[k] + i - self.at[k] - self.lengths[k]

    def end(self, j: int) -> int:
        """Where a match ending at `j` (exclusive) of the view ends in the text."""
        k = bisect.bisect_right(self.at, j - 1) - 1
        if k < 0:
            return j
        if j - 1 < self.at[k] + self.lengths[k]:
            return self.ends[k]
        return self.ends[k] + j - self.at[k] - self.lengths[k]


class _Folded(_Back):
    """`text` with its compatibility forms of ASCII as ASCII (`_COMPAT`: mathematical,
    circled, superscript letters and digits, ligatures, every space as U+0020), and the
    way back where one character became several (`"\u2026"` is "..."). A text without
    any costs one scan; one with a few kinds of them (prose's "\u00b2", no-break spaces)
    one `str.replace` a kind; else one call a run of them."""

    __slots__ = ("text",)

    def __init__(self, text: str, special: set[str] | None = None) -> None:
        """`special`: the text's characters of the Basic Multilingual Plane `_SPECIAL_BMP`
        finds, when the caller has them (no second scan)."""
        super().__init__()
        self.text = text
        if text.isascii():
            return
        astral = _may_be_astral(text) and _COMPAT_ASTRAL.search(text) is not None
        if astral:
            kinds = set(_COMPAT_CHAR_ANY.findall(text))
        elif special is not None:
            kinds = {c for c in special if ord(c) in _COMPAT}
        else:
            kinds = set(_COMPAT_CHAR_BMP.findall(text))
        if not kinds:
            return
        pattern = _COMPAT_ANY if astral else _COMPAT_BMP
        if all(len(_COMPAT[ord(c)]) == 1 for c in kinds):  # one for one: the offsets stay
            if len(kinds) > _REPLACES:
                self.text = pattern.sub(_compat_run, text)
                return
            for char in kinds:
                text = text.replace(char, _COMPAT[ord(char)])
            self.text = text
            return
        pieces: list[str] = []
        last = 0
        size = 0
        for m in pattern.finditer(text):
            run = m.group()
            folded = run.translate(_COMPAT)
            pieces.append(text[last : m.start()])
            size += m.start() - last
            if len(folded) != len(run):  # rare: record each character that grew
                at = size
                for i, char in enumerate(run, m.start()):
                    new = _COMPAT[ord(char)]
                    if len(new) > 1:
                        self.at.append(at)
                        self.lengths.append(len(new))
                        self.starts.append(i)
                        self.ends.append(i + 1)
                    at += len(new)
            pieces.append(folded)
            size += len(folded)
            last = m.end()
        pieces.append(text[last:])
        self.text = "".join(pieces)


class _View(_Back):
    """A text with one layer of escapes decoded, and the way back to the text's offsets; an
    escape of a character that shows nothing (`_INVISIBLE`) decodes to nothing, as the text
    itself is read joined (`_Joined`)."""

    __slots__ = ("canon", "dropped", "wraps")

    def __init__(self, text: str, hidden: bool = False, wrap: bool = False) -> None:
        """`hidden`: the text holds invisible characters of its own; they are removed too
        when an escape stands for one (a value holding one of them and an escaped one).
        `wrap`: a line break right after an escaped invisible character is read away with
        it (a wrapped line's end: `-ca\u200b\nt`); else it is kept (it may be a value's own
        space), and `wraps` says whether there is one."""
        self.at, self.lengths, self.starts, self.ends = [], [], [], []  # (every text: no call)
        self.dropped = False  # an escaped invisible character read as nothing
        self.wraps = False  # one right before a line break (`_WRAP_AFTER`)
        decoded: list[tuple[int, int, str]] = []  # (start, end) in the text, what it reads
        joined_to = 0  # an escaped line break read away with the escape before it
        for m in _ESCAPES.finditer(text):
            if m.start() < joined_to:
                continue
            char = _decoded(m)
            if char is None:
                continue
            char = char.translate(_FOLD_CHAR)  # `\uff32` is an escaped fullwidth "R"
            end = m.end()
            if len(char) == 1 and _HIDDEN.match(char) is not None:
                char = ""  # an escaped soft hyphen (`&shy;`), `\u200b`: read joined
                self.dropped = True
                if (after := _WRAP_AFTER.match(text, end)) is not None:
                    self.wraps = True
                    if wrap:
                        end = joined_to = after.end()
            decoded.append((m.start(), end, char))
        if not decoded:  # most texts
            self.canon = ""
            return
        if hidden:  # the text's own too (two scans: one pattern is slower)
            decoded += ((m.start(), m.end(), "") for m in _HIDDEN_BMP.finditer(text))
            if _may_be_astral(text):
                decoded += ((m.start(), m.end(), "") for m in _HIDDEN_ASTRAL.finditer(text))
            decoded.sort()
        pieces: list[str] = []
        last = 0
        size = 0
        for start, end, char in decoded:
            if start < last:  # the text's own, inside a line break read away
                continue
            pieces.append(text[last:start])
            size += start - last
            self.at.append(size)
            self.lengths.append(len(char))
            self.starts.append(start)
            self.ends.append(end)
            pieces.append(char)
            size += len(char)
            last = end
        pieces.append(text[last:])
        self.canon = _lower("".join(pieces)) if self.at else ""


def _unbroken(chain: str, i: int, breaks: re.Pattern[str] = _BREAKS) -> int:
    """Where the character at `i` of `chain` with its breaks removed is in `chain`."""
    removed = 0
    for m in breaks.finditer(chain):
        if m.start() - removed > i:
            break
        removed += m.end() - m.start()
    return i + removed


def _unwrapped(text: str) -> str:
    """`text` with its breaks removed (`_BREAKS`); plain line breaks (a base64 blob's) by
    `str.replace`, four times faster than the pattern."""
    if _has_hidden(text) or _SPACED.search(text):
        return _BREAKS.sub("", text)
    return text.replace("\r\n", "").replace("\n", "")


class _Joined:
    """The text around each place a spelling may be wrapped or broken (`_EDGE`, and each
    character that shows nothing: `_INVISIBLE`), `reach` characters either side, with its
    breaks removed (`_BREAKS`) and fullwidth ASCII read as ASCII (`_halfwidth`, every one:
    a run broken by invisible characters is one run here), the regions apart (`_JOIN`),
    and the way back to the text's offsets, made once per region (a text dense with
    matches maps each back in log time, not by walking its region again). Only those
    regions are read again, not the text."""

    __slots__ = ("bases", "breaks", "joined", "low", "marks", "regions", "shifts")

    def __init__(
        self,
        low: str,
        reach: int,
        hidden: bool | None = None,
        breaks: re.Pattern[str] = _BREAKS,
        regions: list[tuple[int, int]] | None = None,
    ) -> None:
        """`breaks`: what is removed (`_INVISIBLES` keeps the line breaks: a passphrase's
        own spaces, `_spelled`, match them), in `regions` (those of the `_Joined` of the same
        text and reach) where a line break is, or around every break."""
        self.low = low
        self.breaks = breaks
        self.regions: list[tuple[int, int]] = []
        self.bases: list[int] = []  # where region k starts in `joined`
        self.marks: list[list[int]] = []  # region k's breaks, where each was, unbroken
        self.shifts: list[list[int]] = []  # characters removed up to each of them
        self.joined = ""
        if hidden is None:
            hidden = _has_hidden(low)
        if ("\n" not in low or breaks is not _BREAKS) and not hidden:
            return
        if regions is None:
            regions = self._around(low, reach, hidden)
        if breaks is not _BREAKS:  # only where a line break is: elsewhere as `_BREAKS` reads
            regions = [(a, b) for a, b in regions if low.find("\n", a, b) >= 0]
        self.regions = regions
        pieces: list[str] = []
        size = 0
        for start, end in regions:
            region = self._region(start, end)
            region = _unwrapped(region) if breaks is _BREAKS else breaks.sub("", region)
            piece = _halfwidth(region, 1)
            self.bases.append(size)
            pieces.append(piece)
            size += len(piece) + len(_JOIN)
        self.joined = _JOIN.join(pieces)
        self.marks = [[] for _ in regions]  # made at a region's first match (`_way_back`)
        self.shifts = [[] for _ in regions]

    @staticmethod
    def _around(low: str, reach: int, hidden: bool) -> list[tuple[int, int]]:
        """The regions of `low`, `reach` around each place a spelling may be broken."""
        places = [m.start() for m in _EDGE.finditer(low)]
        if hidden:
            places = sorted(places + [m.start() for m in _HIDDEN.finditer(low)])
        regions: list[tuple[int, int]] = []
        for at in places:
            start, end = max(0, at - reach), min(len(low), at + reach)
            if regions and start <= regions[-1][1]:
                regions[-1] = (regions[-1][0], end)
            else:
                regions.append((start, end))
        return regions

    def _region(self, start: int, end: int) -> str:
        return self.low[start:end].replace(_JOIN, "\x01")  # same length, no `_JOIN`

    def _way_back(self, k: int) -> None:
        """Region `k`'s breaks: where each was in the region with them removed, and how
        many characters were removed up to and with it."""
        marks, shifts, removed = self.marks[k], self.shifts[k], 0
        for m in self.breaks.finditer(self._region(*self.regions[k])):
            marks.append(m.start() - removed)
            removed += m.end() - m.start()
            shifts.append(removed)
        marks.append(len(self.low) + 1)  # past every offset: made, even with no break
        shifts.append(removed)

    def _at(self, i: int) -> int:
        """Where the character at `i` of `joined` is in the text."""
        k = bisect.bisect_right(self.bases, i) - 1
        local = i - self.bases[k]
        if not self.marks[k]:
            self._way_back(k)
        j = bisect.bisect_right(self.marks[k], local) - 1
        return self.regions[k][0] + local + (self.shifts[k][j] if j >= 0 else 0)

    def spans(self, found: list[Span]) -> list[Span]:
        """`found` (matches in `joined`) as spans of the text."""
        return [(self._at(a), self._at(b - 1) + 1, form) for a, b, form in found]


def canonical(text: str) -> str:
    """`text` with one layer of common escapes decoded, lower-cased: what the masker reads."""
    view = _View(text)
    return view.canon if view.at else _lower(text)


def _failure(pattern: str) -> list[int]:
    """KMP failure table: fail[i] = longest proper border of pattern[: i + 1]."""
    fail = [0] * len(pattern)
    k = 0
    for i in range(1, len(pattern)):
        while k and pattern[i] != pattern[k]:
            k = fail[k - 1]
        if pattern[i] == pattern[k]:
            k += 1
        fail[i] = k
    return fail


def _overlap(text: str, pattern: str, fail: list[int]) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of `pattern`."""
    window = text[max(0, len(text) - len(pattern) + 1) :]
    start = window.find(pattern[0])
    if start < 0:
        return 0
    k = 0
    for ch in window[start:]:
        while k and pattern[k] != ch:
            k = fail[k - 1]
        if pattern[k] == ch:
            k += 1
            if k == len(pattern):
                k = fail[k - 1]
    return k


Span = tuple[int, int, str]  # start, end, mark


def _back(found: list[Span], folded: _Folded) -> list[Span]:
    """Spans of `folded.text` as spans of the text it was folded from, merged again (two
    that end and start inside one character that stood for several now overlap)."""
    merged: list[Span] = []
    for start, end, mark in found:
        start, end = folded.start(start), folded.end(end)
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]), merged[-1][2])
        else:
            merged.append((start, end, mark))
    return merged


class Matcher:
    r"""Finds known strings in text, in any letter case and through one layer of escapes.

    `forms` maps each string to the mark that replaces it. A text is searched
    as it is (lower-cased) and, when it holds escapes (`\/`, `\uXXXX`, `&#43;`,
    `&amp;`, `%2f`), once more decoded (`canonical`); a match there replaces
    the original span, escapes and all. Overlapping matches merge into one.
    """

    def __init__(self, forms: Mapping[str, str]) -> None:
        by_form: dict[str, str] = {}
        for form, mark in forms.items():
            for spelled in (form, _halfwidth(form, 1), canonical(form), *_edge_readings(form)):
                for known in (_lower(spelled), _lower(_Folded(spelled).text)):  # its own NBSP
                    # a reading of blanks alone or of nothing (`&shy;&shy;` decodes to
                    # nothing), or one that decoding made shorter than a secret, would
                    # match at no width (a search that never ends) or almost anywhere
                    short = len(known) < min(MIN_SECRET_CHARS, len(form))
                    if known and not known.isspace() and not short:
                        by_form.setdefault(known, mark)
        # a value's own spaces match any run of blanks (`_spelled`): a match that is no form
        # is known with its blanks as one space (`_found`)
        self._spaced = any(" " in f for f in by_form)
        longest_first = sorted(by_form, key=lambda f: (-len(f), f))
        self._pattern = (
            re.compile("|".join(_spelled(f) for f in longest_first)) if by_form else None
        )
        self._tables = [(f, _failure(f)) for f in longest_first]
        squeezed: dict[str, str] = {}  # the spaced forms, each run of blanks as one space
        for form, mark in by_form.items() if self._spaced else ():
            if " " in form:
                squeezed.setdefault(_BLANKS.sub(" ", form), mark)
        self._squeezed = [(f, _failure(f)) for f in sorted(squeezed, key=lambda f: (-len(f), f))]
        # a form whose own blanks are more than one space (`correct  horse`): a tail with
        # single spaces may start it too, so its squeezed forms are always looked at
        self._wide = any(f not in by_form for f in squeezed)
        self._by_form = {**squeezed, **by_form}  # (the same pattern: not in it)
        # how far from a line break a spelling across it may reach (`_Joined`), and how far
        # back a held chain of tokens is looked for (`open_at`)
        self._window = len(longest_first[0]) + 64 if longest_first else 0

    def __bool__(self) -> bool:
        return self._pattern is not None

    def _found(self, low: str) -> list[Span]:
        """Each match in `low` (start, end, form), lengthened by any form that starts
        inside it: two values overlapping in a text are hidden whole, both of them."""
        assert self._pattern is not None
        out: list[Span] = []
        pos = 0
        while (m := self._pattern.search(low, pos)) is not None:
            start, end = m.span()
            if end == start:  # no form matches at no width (`__init__`); never loop on one
                pos = end + 1
                continue
            at = start + 1
            while at < end:  # rare (a match), and bounded by the longest form
                inner = self._pattern.match(low, at)
                if inner is not None and inner.end() > end:
                    end = inner.end()
                at += 1
            form = m.group(0)
            if self._spaced and form not in self._by_form:
                form = _BLANKS.sub(" ", form)
            out.append((start, end, form))
            pos = end
        return out

    def spans(self, text: str) -> list[Span]:
        """The merged spans of `text` to replace, in order."""
        if self._pattern is None:
            return []
        hidden = False
        folded = None  # a character that stood for several: the folded text's spans mapped back
        if _has_special(text):  # one look, then closer
            if _holds(text, _OTHER_BMP, _SPECIAL_ASTRAL):  # not only fullwidth (CJK prose)
                special = set(_SPECIAL_BMP.findall(text))  # one scan says which kinds
                folded = _Folded(text, special)
                text = folded.text  # spans mapped back at the end (`_back`) if it grew
                kinds = "".join(special)
                if _FULLWIDTH_RUN[1].search(kinds) is not None:
                    text = _halfwidth(text)
                hidden = _HIDDEN_BMP.search(kinds) is not None or (
                    _may_be_astral(text) and _HIDDEN_ASTRAL.search(text) is not None
                )
            else:
                text = _halfwidth(text)  # one character for one: the spans are the text's
        low = _lower(text)
        found = self._found(low)
        view = _View(text, hidden)
        joined = _Joined(low, self._window, hidden)
        more = joined.joined and self._found(joined.joined)
        if more:
            found += joined.spans(more)
        if hidden and self._spaced and "\n" in low:  # invisible characters removed, line
            # breaks kept (`_Joined` removes both: "correct horse" then "battery" joined)
            kept = _Joined(low, self._window, True, _INVISIBLES, joined.regions)
            if kept_found := self._found(kept.joined):
                found += kept.spans(kept_found)
                more = kept_found
        if view.at:
            found += [(view.start(a), view.end(b), form) for a, b, form in self._found(view.canon)]
            if view.dropped and "\n" in view.canon:  # `&shy;` then a line break (wrapped HTML)
                wrapped = _Joined(view.canon, self._window)
                if wrapped.joined and (inner := self._found(wrapped.joined)):
                    found += [(view.start(a), view.end(b), f) for a, b, f in wrapped.spans(inner)]
            if view.wraps:  # and read once more with the line break right after it read away
                unwrapped = _View(text, hidden, wrap=True)
                found += [
                    (unwrapped.start(a), unwrapped.end(b), form)
                    for a, b, form in self._found(unwrapped.canon)
                ]
        if more or view.at:
            found.sort(key=lambda s: (s[0], -s[1]))
        merged: list[Span] = []
        for start, end, form in found:
            if merged and start < merged[-1][1]:
                if end > merged[-1][1]:
                    merged[-1] = (merged[-1][0], end, merged[-1][2])
                continue
            merged.append((start, end, self._by_form[form]))
        return _back(merged, folded) if folded is not None and folded.at else merged

    def sub(self, text: str) -> str:
        out: list[str] = []
        last = 0
        for start, end, mark in self.spans(text):
            out += (text[last:start], mark)
            last = end
        out.append(text[last:])
        return "".join(out) if last else text

    def _held(self, tail: str, tables: list[tuple[str, list[int]]] | None = None) -> int:
        """Length of the longest suffix of `tail` (lower-cased) that starts some form (of
        `tables`: all by default)."""
        best = 0
        for form, fail in self._tables if tables is None else tables:
            if len(form) - 1 <= best:
                break  # longest first: no shorter form can beat `best`
            best = max(best, _overlap(tail, form, fail))
        return best

    def open_at(self, text: str) -> int:
        """Where the tail of `text` that more text could make a match (or lengthen one) starts."""
        folded = _Folded(text)
        if folded.at:  # a character that stands for several: read where it stands
            return folded.start(self.open_at(folded.text))
        text = folded.text  # one character for one
        partial = _PARTIAL.search(text, max(0, len(text) - 40))
        cut = partial.start() if partial else len(text)
        base = _halfwidth(text[:cut], 1)
        low = _lower(base)
        at = min(cut, len(base) - self._held(low))
        # what follows decides if a short fullwidth run is read as ASCII (`spans`): a whole
        # form that ends the tail with one waits
        if (short := _FULLWIDTH_END.search(text, max(0, cut - 5), cut)) is not None:
            first = max(0, len(low) - self._window)
            for start, end, _ in self._found(low[first:]):
                if first + end >= len(low) - max(1, len(short.group(1))):
                    at = min(at, first + start)
        # a spelling may go on after a line break or an invisible character (`_Joined`)
        reach = self._window
        if _has_hidden(low[-reach:]):  # invisible characters between a value's letters
            reach *= HIDDEN_REACH
        # the whole tail read joined, spaces and all (a passphrase with an invisible
        # character inside), and a line break may follow its last blanks
        if (joined_at := self._joined_at(low, reach)) is not None:
            at = min(at, joined_at)
        first = max(0, len(low) - reach)
        tail = low[first:]
        if self._spaced:  # the tail with each run of blanks as one space, invisibles removed
            spaced = tail.translate(_LINE_SEPARATORS)  # blanks, though hidden
            seen = _INVISIBLES.sub("", spaced)
            squeezed = _BLANKS.sub(" ", seen)
            if (self._wide or squeezed != tail) and (held := self._held(squeezed, self._squeezed)):
                i = _unsqueezed(seen, len(squeezed) - held)
                at = min(at, first + _unbroken(spaced, i, _INVISIBLES))
        view = _View(base, _has_hidden(base))
        if view.at:
            at = min(at, self._view_open_at(view, reach))
            if view.wraps:  # read once more with the line break after one read away (`spans`)
                at = min(at, self._view_open_at(_View(base, _has_hidden(base), True), reach))
        at = _with_left(text, at)
        # never inside an escape: the tail is read again with what follows, and
        # must decode as it does in the whole text (`\\` then `u0041` is no `A`)
        whole = _View(_halfwidth(text, 1)) if cut < len(text) or view.at else view
        k = bisect.bisect_right(whole.starts, at) - 1
        if k >= 0 and at < whole.ends[k]:
            at = whole.starts[k]
        return at

    def _view_open_at(self, view: _View, reach: int) -> int:
        """`open_at` of a decoded view's tail, as an offset of the text."""
        at = view.start(len(view.canon) - self._held(view.canon))
        # an escaped invisible character, then a line break (`spans`)
        if view.dropped and (joined_at := self._joined_at(view.canon, reach)) is not None:
            at = min(at, view.start(joined_at))
        if self._spaced:  # decoded blanks (`\n`, `\u00a0`) and escapes between them
            first = max(0, len(view.canon) - reach)
            tail = view.canon[first:]
            squeezed = _BLANKS.sub(" ", tail)
            if (self._wide or squeezed != tail) and (held := self._held(squeezed, self._squeezed)):
                at = min(at, view.start(first + _unsqueezed(tail, len(squeezed) - held)))
        return at

    def _joined_at(self, low: str, reach: int) -> int | None:
        """Where in `low` its last `reach` characters, read with their breaks removed
        (`_BREAKS`; blanks before a line break too), start a form, or None."""
        first = max(0, len(low) - reach)
        tail = low[first:]
        joined = _BREAKS.sub("", tail).rstrip(" \t\r")
        if joined == tail:
            return None
        held = self._held(joined)
        at = len(joined) - held if held else len(joined)
        if self._spaced:  # and each run of blanks left as one space (`ｏ\r\nｋ！  h`)
            squeezed = _BLANKS.sub(" ", joined)
            if (self._wide or squeezed != joined) and (
                held := self._held(squeezed, self._squeezed)
            ):
                at = min(at, _unsqueezed(joined, len(squeezed) - held))
        return first + _unbroken(tail, at) if at < len(joined) else None

    def split(self, text: str, sent: int = 0, *, end: bool = False) -> tuple[str, str]:
        """(text from `sent` on with every final match replaced, raw tail to hold back).
        The first `sent` characters were sent already: they are read, as what decides how
        the rest reads, and never returned; a match that began in them is replaced from
        `sent` on. `end`: no more text comes, every match is final."""
        if self._pattern is None:
            return text[sent:], ""
        if sent and _FULLWIDTH_RUN[1].search(text, sent, sent + MIN_SECRET_CHARS - 1) is None:
            # only how a fullwidth run reads depends on what is before it, and only a run
            # that starts within three characters of it (`_FULLWIDTH_RUN`) or before it
            text, sent = text[sent:], 0
        # From `open_at` on, the text may be the start of a form that more text
        # would complete (or lengthen: padding after unpadded base64, an escape
        # cut in two, another value overlapping it), so a match reaching there is
        # left for later; one that ends before it is final.
        open_at = len(text) if end else max(sent, self.open_at(text))
        spans = self.spans(text)
        for k in range(len(spans) - 1, -1, -1):  # a match that more text could lengthen
            start, end_, _ = spans[k]  # waits whole, with what it needs held (`_with_left`),
            if end_ <= open_at:  # but never a match before it: that one is sent masked now
                break  # (holding it again and again made a chain of them quadratic)
            if start < open_at:
                open_at = max(_with_left(text, start), spans[k - 1][1] if k else 0, sent)
        out: list[str] = []
        last = sent
        for start, end_, mark in spans:
            if end_ > open_at:
                break
            if end_ > sent:
                out += (text[last:start] if start > last else "", mark)
                last = end_
        out.append(text[last:open_at])
        return "".join(out), text[open_at:]


class Masker:
    """The secrets of one tenant, ready to mask text (built when the vault changes)."""

    def __init__(self, secrets: Mapping[str, str], refused: Iterable[str] = ()) -> None:
        self._secrets = dict(secrets)
        self._refused = frozenset(r for r in refused if len(r) >= MIN_SECRET_CHARS)
        by_form: dict[str, str] = {}
        for name, value in sorted(self._secrets.items()):
            if len(value) >= MIN_SECRET_CHARS:
                for form in sorted(spellings(value)):
                    by_form.setdefault(form, f"[vault:{name}]")
        for span in sorted(self._refused):
            for form in sorted(spellings(span)):
                by_form.setdefault(form, REFUSED_MARK)
        self._matcher = Matcher(by_form)
        self._any = bool(self._matcher)  # anything to mask (read on every `mask`)
        self._marks = frozenset(by_form.values())
        self._idempotent: bool | None = None

    @property
    def idempotent(self) -> bool:
        """Whether masking this masker's own output again surely changes nothing, told
        cheaply: only a value that can overlap one of its marks (`[vault:NAME]`, the
        refused mark) can turn up anew in masked text (two marks side by side may spell
        `][vault:`), so it holds when no value or refused span holds a bracket, an
        escape's lead (`%`, `&`, a backslash) or a character outside ASCII (a decoded or
        folded reading may make a bracket), and none is a piece of a mark."""
        if self._idempotent is None:
            marks = [mark.casefold() for mark in self._marks]
            self._idempotent = all(
                text.isascii()
                and not any(c in text for c in "[]%&\\")
                and not any(text.casefold() in mark for mark in marks)
                for text in (*self._secrets.values(), *self._refused)
            )
        return self._idempotent

    def mask(self, text: str) -> Masked:
        if not text.isascii():  # ASCII is valid Unicode (a flag: no call)
            text = valid_unicode(text)  # what leaves roost or is stored is valid Unicode
        if not self._any or not text:  # nothing to mask: masked already as it is
            return text if type(text) is Masked else Masked(text)
        return Masked(self._matcher.sub(text))

    def also(self, texts: Iterable[str]) -> Masker:
        """This masker plus the secrets the screen finds in `texts` (texts it refused)."""
        spans = {span for text in texts for span in secret_spans(text)}
        if spans <= self._refused:
            return self
        return Masker(self._secrets, self._refused | spans)

    def message(self, m: ChatMessage) -> ChatMessage:
        """A chat message with its text and every tool call's arguments masked."""
        calls = tuple(ToolCallRequest(c.id, c.name, self.mask(c.arguments)) for c in m.tool_calls)
        return ChatMessage(m.role, self.mask(m.content), calls, m.tool_call_id, m.name, m.images)

    def stream(self) -> MaskedDeltas:
        return MaskedDeltas(self)

    def split(self, text: str, sent: int = 0, *, end: bool = False) -> tuple[Masked, str]:
        """(masked text safe to send now, raw tail to hold back); the first `sent`
        characters of `text` were sent already (`Matcher.split`)."""
        out, held = self._matcher.split(
            text if text.isascii() else valid_unicode(text), sent, end=end
        )
        return Masked(out), held


def mask(text: str, secrets: Mapping[str, str]) -> Masked:
    """Replace every spelling of every secret value in `text` with `[vault:NAME]`."""
    return Masker(secrets).mask(text)
