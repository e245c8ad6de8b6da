"""Split rendered text + entities into Telegram-sized messages (pure).

Telegram counts 4096 UTF-16 code units per message, after entities are
parsed. We split the *rendered* text, so markup can never be cut in half.
A cut is chosen, in order of preference, at a paragraph break, a line
break or a space that lies outside every entity; then at a line break or
space inside one (a long code block); only then at the hard limit, moved
back so that it never lands inside a surrogate pair (we cut between code
points) nor inside an emoji sequence (ZWJ, variation selectors, skin
tones, keycaps, flags, combining marks). An entity that spans a cut is cut
too: each message gets its own piece, re-offset to that message. A message
carries at most `MAX_ENTITIES` (Telegram silently ignores the entities
after the 100th), so a text dense with formatting is cut earlier. White
space at a cut is dropped, and a chunk that Telegram would call empty (only
tabs, no-break spaces, U+2028, zero-width or filler characters) is never
produced.
"""

from __future__ import annotations

import unicodedata
from bisect import bisect_right

from bridge.channels.common.render import Entity, Rendered

LIMIT = 4096
MAX_ENTITIES = 100  # Telegram ignores a message's entities after the 100th
_JOINERS = frozenset("\u200d\ufe0e\ufe0f\u20e3")
# Telegram strips these from a message's edges and calls a text of nothing
# else empty: white space, format controls (ZWSP, ZWJ, BOM, bidi marks, soft
# hyphen), separators, controls and the fillers that render blank.
_FILLERS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u180e")
_BLANK_CATEGORIES = frozenset({"Cf", "Cc", "Zs", "Zl", "Zp"})


def blank(ch: str) -> bool:
    return ch.isspace() or ch in _FILLERS or unicodedata.category(ch) in _BLANK_CATEGORIES


def visible(text: str) -> bool:
    """False when Telegram would reject `text` as empty."""
    return not all(blank(ch) for ch in text)


def split(
    rendered: Rendered, limit: int = LIMIT, max_entities: int = MAX_ENTITIES
) -> list[Rendered]:
    """Chunks of at most `limit` UTF-16 units and `max_entities` entities; their
    texts joined with the trimmed whitespace give back the input, and every
    entity is preserved."""
    text = rendered.text
    if len(rendered.entities) <= max_entities and _utf16_units(text) <= limit:
        return [rendered] if visible(text) else []  # one message: no offsets needed
    offsets = _utf16_offsets(text)
    index_of = {u: i for i, u in enumerate(offsets)}
    spans = sorted(
        ((index_of[e.offset], index_of[e.offset + e.length], e) for e in rendered.entities),
        key=lambda span: span[0],
    )
    chunks: list[Rendered] = []
    start = next_span = 0
    live: list[tuple[int, int, Entity]] = []  # spans that may overlap the current chunk
    n = len(text)
    while start < n:
        last_chunk = offsets[n] - offsets[start] <= limit
        hard = n if last_chunk else bisect_right(offsets, offsets[start] + limit) - 1
        while next_span < len(spans) and spans[next_span][0] < hard:
            live.append(spans[next_span])
            next_span += 1
        live = [span for span in live if span[1] > start]  # sorted by start
        if len(live) > max_entities:  # the chunk ends before the first one too many
            hard, last_chunk = max(start + 1, live[max_entities][0]), False
        if last_chunk:
            end = next_start = n
        else:
            end = _choose_cut(text, start, hard, live)
            next_start = end
        chunk_end = end
        while chunk_end > start and text[chunk_end - 1].isspace():
            chunk_end -= 1
        if visible(text[start:chunk_end]):
            chunks.append(_slice(text, offsets, live, start, chunk_end))
        start = next_start
        while start < n and text[start].isspace():
            start += 1
    return chunks


def _utf16_units(text: str) -> int:
    """`_utf16_offsets(text)[-1]` without the list: the UTF-16 length, a lone
    surrogate counted as one unit as there (`surrogatepass`)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _utf16_offsets(text: str) -> list[int]:
    offsets = [0] * (len(text) + 1)
    total = 0
    for i, ch in enumerate(text):
        total += 2 if ord(ch) > 0xFFFF else 1
        offsets[i + 1] = total
    return offsets


def _choose_cut(text: str, start: int, hard: int, spans: list[tuple[int, int, Entity]]) -> int:
    """Index (in code points) at which the chunk starting at `start` ends."""
    floor = start + max(1, (hard - start) // 4)
    inside = [0] * (hard - start + 2)
    for s, e, _ in spans:
        lo, hi = max(s + 1, start), min(e - 1, hard)
        if lo <= hi:
            inside[lo - start] += 1
            inside[hi - start + 1] -= 1
    covered = [False] * (hard - start + 1)
    depth = 0
    for k in range(hard - start + 1):
        depth += inside[k]
        covered[k] = depth > 0

    def best(ok_inside: bool, accept: tuple[str, ...]) -> int | None:
        for cut in range(hard, floor - 1, -1):
            if not ok_inside and covered[cut - start]:
                continue
            for pattern in accept:
                if text.startswith(pattern, cut - len(pattern)) if cut >= len(pattern) else False:
                    return cut
        return None

    for ok_inside, accept in (
        (False, ("\n\n",)),
        (False, ("\n",)),
        (False, (" ",)),
        (True, ("\n",)),
        (True, (" ",)),
    ):
        cut = best(ok_inside, accept)
        if cut is not None:
            return cut
    return _safe_hard_cut(text, start, hard)


def _glued(text: str, cut: int) -> bool:
    """True when a cut before text[cut] would break one visible character."""
    if cut <= 0 or cut >= len(text):
        return False
    after, before = text[cut], text[cut - 1]
    if after in _JOINERS or before == "\u200d":
        return True
    code = ord(after)
    if 0x1F3FB <= code <= 0x1F3FF or 0xE0020 <= code <= 0xE007F:
        return True
    if unicodedata.combining(after):
        return True
    if _regional(after) and _regional(before):
        run = 0
        k = cut - 1
        while k >= 0 and _regional(text[k]):
            run += 1
            k -= 1
        return run % 2 == 1
    return False


def _regional(ch: str) -> bool:
    return 0x1F1E6 <= ord(ch) <= 0x1F1FF


def _safe_hard_cut(text: str, start: int, hard: int) -> int:
    cut = hard
    while cut > start + 1 and _glued(text, cut):
        cut -= 1
    return cut if cut > start + 1 or not _glued(text, hard) else hard


def _slice(
    text: str, offsets: list[int], spans: list[tuple[int, int, Entity]], start: int, end: int
) -> Rendered:
    base = offsets[start]
    kept: list[Entity] = []
    for s, e, ent in spans:
        lo, hi = max(s, start), min(e, end)
        if hi > lo:
            offset, length = offsets[lo] - base, offsets[hi] - offsets[lo]
            kept.append(Entity(ent.type, offset, length, ent.language, ent.url))
    return Rendered(text[start:end], tuple(kept))
