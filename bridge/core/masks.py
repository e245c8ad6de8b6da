"""What the core needs of a tenant's masker: the one masking point, as a protocol.

The masker itself (`bridge.loadout.mask.Masker`) lives with the vault; the
core only calls it: the turn (`bridge.core.turn`) on everything it streams,
stores and sends to the model, the router (`bridge.core.router`) on every
reply that leaves. Each method returns `Masked` (`bridge.types.masked`), the
type the stores take. `MaskedDeltas` masks text that arrives in pieces with
any of them (the tenant's masker, the turn's `bridge.core.turn_mask.TurnMask`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from bridge.types.backend import ChatMessage
from bridge.types.masked import Masked
from bridge.types.messages import valid_unicode


class StreamMask(Protocol):
    def feed(self, delta: str) -> Masked: ...

    def flush(self) -> Masked: ...


class SplitMask(Protocol):
    def mask(self, text: str) -> Masked: ...

    def split(self, text: str, sent: int = 0, *, end: bool = False) -> tuple[Masked, str]: ...


LEFT_CHARS = 8  # characters already sent that a stream keeps to read what follows them


class MaskedDeltas:
    """Feed answer deltas in order; send what `feed` returns; `flush` at the end. The
    tail held back (what may start a secret's spelling) is checked again with every
    piece, by `masker`'s `split` as it is at that moment (a turn's masker grows when a
    screen refuses a text). The last `LEFT_CHARS` characters sent are read again, never
    sent again, before each piece: what is just before a text can decide how it reads (an
    ASCII letter before a short run of fullwidth letters makes it a value's spelling, as
    in the whole text: `a\uff44\uff4f\uff47`)."""

    __slots__ = ("_left", "_masker", "_pending")

    def __init__(self, masker: SplitMask) -> None:
        self._masker = masker
        self._left = ""  # the end of what was sent, read as context only
        self._pending = ""

    def feed(self, delta: str) -> Masked:
        return self._read(self._pending + delta, end=False)

    def flush(self) -> Masked:
        return self._read(self._pending, end=True)

    def _read(self, new: str, *, end: bool) -> Masked:
        # valid Unicode before the offsets are counted: a surrogate pair split between two
        # pieces would otherwise become one character inside the masker
        text = self._left + (new if new.isascii() else valid_unicode(new))
        out, self._pending = self._masker.split(text, len(self._left), end=end)
        # never from the middle of an escape (the second `\` of `\\u0041` is no escape)
        sent = len(text) - len(self._pending)
        self._left = text[max(0, sent - LEFT_CHARS) : sent].lstrip("\\")
        return out


class OutputMask(Protocol):
    """The tenant's masker (`bridge.loadout.mask.Masker`): the one masking point."""

    def mask(self, text: str) -> Masked: ...

    def stream(self) -> StreamMask: ...

    def also(self, texts: Iterable[str]) -> OutputMask:
        """This mask plus the secrets a screen found in `texts` (which it refused)."""
        ...

    def message(self, m: ChatMessage) -> ChatMessage:
        """`m` with its text and tool-call arguments masked."""
        ...

    def split(self, text: str, sent: int = 0, *, end: bool = False) -> tuple[Masked, str]:
        """(`text` masked as far as it is final, the raw tail that may start a spelling).
        Its first `sent` characters were sent already: read, never returned. `end`: no
        more text comes, so nothing is held."""
        ...
