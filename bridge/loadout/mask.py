"""Masking vault values, in every common spelling, out of text.

`Masker(secrets)` knows every spelling of each value (`spellings`): the value
itself, its JSON and Python string escapes, URL-encoding (`quote`,
`quote_plus`, lower-case hex), hex in both cases, base64 standard and urlsafe
with and without padding, and the part of a base64 text that only the value
decides when the value sits inside a longer encoded blob (HTTP Basic auth
`user:value`, say) at each of the three byte alignments. `mask(text)`
replaces each with `[vault:NAME]` and returns `Masked` (`bridge.types.masked`):
the one type the ways out of roost accept, so this module is the one masking
point. `also(texts)` is the same masker plus the secrets a screen refused to
keep in those texts (`bridge.loadout.refused`), each spelling replaced by
`[refused secret]`: the turn that met a refusal stores them masked. Masked
text is also valid Unicode: a lone surrogate (from a tool's result, an MCP
server's JSON) becomes U+FFFD (`valid_unicode`), so no store refuses it.

`StreamMasker` does the same for text that arrives in pieces: it holds back
the longest tail that could be the start of some spelling (found with the
Knuth-Morris-Pratt failure table: the work per piece is linear in the held
tail, which is never longer than the longest spelling), and a value split
across two pieces is never sent half-way.

Which values to mask for a tenant: all of that tenant's vault values (a tool
may obtain or echo any of them), not only those a tool declared.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterable, Mapping
from urllib.parse import quote, quote_plus

from bridge.loadout.refused import secret_spans
from bridge.types.backend import ChatMessage, ToolCallRequest
from bridge.types.masked import Masked
from bridge.types.messages import valid_unicode

MIN_SECRET_CHARS = 4
REFUSED_MARK = "[refused secret]"
_ESCAPE = re.compile(r"%[0-9A-F]{2}")


def _aligned(data: bytes, offset: int, encode: Callable[[bytes], bytes]) -> str:
    """Base64 characters fully decided by `data` when it starts `offset` bytes into a blob."""
    text = encode(b"\0" * offset + data).decode("ascii")
    first = -(-offset * 8 // 6)
    last = (offset + len(data)) * 8 // 6
    return text[first:last]


def spellings(value: str) -> set[str]:
    """The value and its common encodings, each at least MIN_SECRET_CHARS long."""
    data = value.encode("utf-8")
    escaped = json.dumps(value)[1:-1]
    forms = {
        value,
        escaped,
        json.dumps(value, ensure_ascii=False)[1:-1],
        json.dumps(escaped)[1:-1],  # a JSON text inside a JSON string
        repr(value)[1:-1],
        ascii(value)[1:-1],
        data.hex(),
        data.hex().upper(),
    }
    for quoted in (quote(value, safe=""), quote(value), quote_plus(value)):
        forms.add(quoted)
        forms.add(_ESCAPE.sub(lambda m: m.group(0).lower(), quoted))
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        full = encode(data).decode("ascii")
        forms.update((full, full.rstrip("=")))
        forms.update(_aligned(data, offset, encode) for offset in range(3))
    return {f for f in forms if len(f) >= MIN_SECRET_CHARS}


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


class Masker:
    """The secrets of one tenant, ready to mask text (built when the vault changes)."""

    def __init__(self, secrets: Mapping[str, str], refused: Iterable[str] = ()) -> None:
        self._secrets = dict(secrets)
        self._refused = frozenset(r for r in refused if len(r) >= MIN_SECRET_CHARS)
        by_form: dict[str, str] = {}
        for name, value in sorted(self._secrets.items()):
            if len(value) >= MIN_SECRET_CHARS:
                for form in spellings(value):
                    by_form.setdefault(form, f"[vault:{name}]")
        for span in sorted(self._refused):
            for form in spellings(span):
                by_form.setdefault(form, REFUSED_MARK)
        self._by_form = by_form
        longest_first = sorted(by_form, key=lambda f: (-len(f), f))
        self._pattern = (
            re.compile("|".join(re.escape(f) for f in longest_first)) if by_form else None
        )
        self._tables = [(f, _failure(f)) for f in longest_first]

    def _replace(self, m: re.Match[str]) -> str:
        return self._by_form[m.group(0)]

    def mask(self, text: str) -> Masked:
        text = valid_unicode(text)  # what leaves roost or is stored is valid Unicode
        if self._pattern is None or not text:
            return Masked(text)
        return Masked(self._pattern.sub(self._replace, text))

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

    def stream(self) -> StreamMasker:
        return StreamMasker(self)

    def _held(self, tail: str) -> int:
        """Length of the longest suffix of `tail` that starts some spelling."""
        best = 0
        for form, fail in self._tables:
            if len(form) - 1 <= best:
                break  # longest first: no shorter form can beat `best`
            best = max(best, _overlap(tail, form, fail))
        return best

    def split(self, text: str) -> tuple[Masked, str]:
        """(masked text safe to send now, raw tail to hold back)."""
        text = valid_unicode(text)
        if self._pattern is None:
            return Masked(text), ""
        # From `open_at` on, the text may be the start of a spelling that more text
        # would complete (or lengthen: padding after unpadded base64), so a match
        # there is left for later; a match before it is final.
        open_at = len(text) - self._held(text)
        out: list[str] = []
        last = 0
        for m in self._pattern.finditer(text):
            if m.start() >= open_at:
                break
            out.append(text[last : m.start()])
            out.append(self._replace(m))
            last = m.end()
        if last <= open_at:
            out.append(text[last:open_at])
            return Masked("".join(out)), text[open_at:]
        rest = text[last:]
        hold = self._held(rest)
        out.append(rest[: len(rest) - hold])
        return Masked("".join(out)), rest[len(rest) - hold :]


def mask(text: str, secrets: Mapping[str, str]) -> Masked:
    """Replace every spelling of every secret value in `text` with `[vault:NAME]`."""
    return Masker(secrets).mask(text)


class StreamMasker:
    """Feed answer deltas in order; send what `feed` returns; `flush` at the end."""

    def __init__(self, masker: Masker) -> None:
        self._masker = masker
        self._pending = ""

    def feed(self, delta: str) -> Masked:
        out, self._pending = self._masker.split(self._pending + delta)
        return out

    def flush(self) -> Masked:
        out, self._pending = self._masker.mask(self._pending), ""
        return out
