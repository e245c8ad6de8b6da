"""A Markdown table as monospace text, its columns aligned (pure).

Telegram has no tables, so a table becomes a `pre` block: cells as plain
text, one row per line, columns padded to their widest cell and aligned as
the Markdown asked (`:--`, `:-:`, `--:`), a rule under the header. Widths
are display columns, not characters: East Asian wide and full-width
characters and emoji take two, combining marks, joiners, variation
selectors and skin-tone modifiers none, so CJK and emoji rows line up in a
monospace font. A cell's line breaks become spaces; a cell wider than
`MAX_CELL` columns is cut with "…" so one long cell cannot push the
rest of the table off a phone screen.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

MAX_CELL = 40
SEPARATOR = " │ "
_ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff")
_WIDE = frozenset("WF")


def char_width(ch: str) -> int:
    """Display columns of one code point in a monospace font (0, 1 or 2)."""
    code = ord(ch)
    if ch in _ZERO_WIDTH or 0xFE00 <= code <= 0xFE0F or 0x1F3FB <= code <= 0x1F3FF:
        return 0
    if 0xE0000 <= code <= 0xE007F or unicodedata.combining(ch):
        return 0
    category = unicodedata.category(ch)
    if category in ("Mn", "Me", "Cf", "Cc"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in _WIDE else 1


def width(text: str) -> int:
    """Display columns of `text`: what follows a zero-width joiner joins the
    glyph before it (👨‍👩‍👧 is one emoji), an emoji-presentation selector
    widens the narrow symbol before it (❤️), a pair of regional indicators is
    one flag."""
    total = 0
    previous = 0
    joined = False
    regional = 0
    for ch in text:
        code = ord(ch)
        if joined:
            joined = False
            continue
        if ch == "\u200d":
            joined = True
            continue
        if code == 0xFE0F and previous == 1:
            total += 1
            previous = 2
            continue
        if 0x1F1E6 <= code <= 0x1F1FF:
            regional += 1
            w = 2 if regional % 2 == 1 else 0
        else:
            regional = 0
            w = char_width(ch)
        total += w
        previous = w or previous
    return total


def _fit(cell: str) -> str:
    cell = " ".join(cell.split())
    if width(cell) <= MAX_CELL:
        return cell
    out: list[str] = []
    used = 0
    for ch in cell:
        w = char_width(ch)
        if used + w > MAX_CELL - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + "…"


def _pad(cell: str, size: int, align: str) -> str:
    gap = size - width(cell)
    if align == "right":
        return " " * gap + cell
    if align == "center":
        left = gap // 2
        return " " * left + cell + " " * (gap - left)
    return cell + " " * gap


def table_text(rows: Sequence[Sequence[str]], aligns: Sequence[str], header: bool) -> str:
    """The lines of a table: `rows` of cell texts (the first is the header when
    `header`), `aligns` per column ("left", "center", "right" or "")."""
    if not rows:
        return ""
    columns = max(len(row) for row in rows)
    grid = [[_fit(row[k]) if k < len(row) else "" for k in range(columns)] for row in rows]
    sizes = [max(1, *(width(row[k]) for row in grid)) for k in range(columns)]
    align = [aligns[k] if k < len(aligns) else "" for k in range(columns)]
    lines = [
        SEPARATOR.join(_pad(cell, sizes[k], align[k]) for k, cell in enumerate(row)).rstrip()
        for row in grid
    ]
    if header:
        lines.insert(1, "─┼─".join("─" * size for size in sizes))
    return "\n".join(lines)
