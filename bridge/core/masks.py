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


class StreamMask(Protocol):
    def feed(self, delta: str) -> Masked: ...

    def flush(self) -> Masked: ...


class SplitMask(Protocol):
    def mask(self, text: str) -> Masked: ...

    def split(self, text: str) -> tuple[Masked, str]: ...


class MaskedDeltas:
    """Feed answer deltas in order; send what `feed` returns; `flush` at the end. The
    tail held back (what may start a secret's spelling) is checked again with every
    piece, by `masker`'s `split` as it is at that moment (a turn's masker grows when a
    screen refuses a text)."""

    __slots__ = ("_masker", "_pending")

    def __init__(self, masker: SplitMask) -> None:
        self._masker = masker
        self._pending = ""

    def feed(self, delta: str) -> Masked:
        out, self._pending = self._masker.split(self._pending + delta)
        return out

    def flush(self) -> Masked:
        out, self._pending = self._masker.mask(self._pending), ""
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

    def split(self, text: str) -> tuple[Masked, str]:
        """(`text` masked as far as it is final, the raw tail that may start a spelling)."""
        ...
