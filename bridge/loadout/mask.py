"""Masking vault values out of text the model produced.

`mask(text, values)` replaces every occurrence of a secret value with
`[vault:NAME]`. `StreamMasker` does the same for an answer that arrives in
pieces: it holds back the tail of the text that could be the start of a
secret, so a value split across two deltas is never sent half-way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

MIN_SECRET_CHARS = 4


def _pattern(values: Mapping[str, str]) -> re.Pattern[str] | None:
    usable = sorted((v for v in values.values() if len(v) >= MIN_SECRET_CHARS), key=len)
    if not usable:
        return None
    return re.compile("|".join(re.escape(v) for v in reversed(usable)))


class Masker:
    """The secrets of one tenant, ready to mask text (built per turn, immutable)."""

    def __init__(self, secrets: Mapping[str, str]) -> None:
        self._by_value = {v: k for k, v in secrets.items() if len(v) >= MIN_SECRET_CHARS}
        self._pattern = _pattern(secrets)
        self._max = max((len(v) for v in self._by_value), default=0)

    def mask(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub(lambda m: f"[vault:{self._by_value[m.group(0)]}]", text)

    def stream(self) -> StreamMasker:
        return StreamMasker(self)

    def _held(self, tail: str) -> int:
        """Length of the longest suffix of `tail` that starts some secret value."""
        for k in range(min(len(tail), self._max - 1), 0, -1):
            piece = tail[-k:]
            if any(v.startswith(piece) for v in self._by_value):
                return k
        return 0

    def split(self, text: str) -> tuple[str, str]:
        """(masked text safe to send now, raw tail to hold back)."""
        if self._pattern is None:
            return text, ""
        out: list[str] = []
        last = 0
        for m in self._pattern.finditer(text):
            out.append(text[last : m.start()])
            out.append(f"[vault:{self._by_value[m.group(0)]}]")
            last = m.end()
        rest = text[last:]
        hold = self._held(rest)
        out.append(rest[: len(rest) - hold])
        return "".join(out), rest[len(rest) - hold :]


def mask(text: str, secrets: Mapping[str, str]) -> str:
    """Replace every secret value in `text` with `[vault:NAME]`."""
    return Masker(secrets).mask(text)


class StreamMasker:
    """Feed answer deltas in order; send what `feed` returns; `flush` at the end."""

    def __init__(self, masker: Masker) -> None:
        self._masker = masker
        self._pending = ""

    def feed(self, delta: str) -> str:
        out, self._pending = self._masker.split(self._pending + delta)
        return out

    def flush(self) -> str:
        out, self._pending = self._masker.mask(self._pending), ""
        return out
