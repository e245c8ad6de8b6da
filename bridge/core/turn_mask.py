"""The masker of one turn: the tenant's, plus every secret a screen refused so far.

A tool whose screen refuses a text (a `memory_save` that held a password)
appends it to `TurnContext.refused` in the middle of the turn. `TurnMask`
is the one masker the turn hands out (`bridge.core.turn`): each call asks
`now()`, the tenant's masker plus the secrets of every text refused until
then (`OutputMask.also`, rebuilt only when the list grew), so no branch of
the turn can mask with a masker from before a refusal: the stream of deltas
(`stream`: its held-back tail is checked again by the masker of now, so a
secret refused after it was held is never sent), the agent loop's `redact`
(the tool card, the tool results), the failed, stopped and answered turn's
stored texts and the notices.

Its `mask` is a bound method the agent loop's `MaskMemo` keys its memos on:
it names the masker of now (`masker_now`), so an unchanged history is masked
once across turns, as with the tenant's masker itself. `message` masks a tool
step's names and ids too (`bridge.core.mask_memo.redacted`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bridge.core.mask_memo import redacted
from bridge.core.masks import MaskedDeltas, OutputMask
from bridge.types.backend import ChatMessage
from bridge.types.masked import Masked
from bridge.types.progress import SHOWN_CHARS

SCREEN_MARGIN = 512  # characters screened past what a tool card shows


class TurnMask:
    """The tenant's masker plus the secrets of `refused` as it is now (the turn's list)."""

    __slots__ = ("_base", "_now", "_refused", "_seen")

    def __init__(self, base: OutputMask, refused: Sequence[str]) -> None:
        self._base = base
        self._refused = refused  # the turn's own list: a tool appends to it
        self._seen = 0
        self._now = base

    def masker_now(self) -> OutputMask:
        """The tenant's masker plus every secret refused so far this turn."""
        if len(self._refused) != self._seen:
            self._seen = len(self._refused)
            self._now = self._base.also(self._refused)
        return self._now

    def mask(self, text: str) -> Masked:
        if len(self._refused) != self._seen:  # `masker_now`, inline (several calls a turn)
            return self.masker_now().mask(text)
        return self._now.mask(text)

    def screened(self, text: str) -> Masked:
        """`text` masked, and also without what the secret screen would refuse in its head
        (the part a tool card shows, `SHOWN_CHARS`, and a margin for a secret across its
        cut): what the card shows of a call's arguments before the call ran (and a screen
        refused them). The head only: the screen's cost grows with the text."""
        head = text[: SHOWN_CHARS + SCREEN_MARGIN]
        return self.masker_now().also((head,)).mask(text)

    def message(self, m: ChatMessage) -> ChatMessage:
        """`m` masked: its text, its tool calls' arguments, names and ids."""
        return redacted(m, self.masker_now().mask)

    def also(self, texts: Iterable[str]) -> OutputMask:
        return self.masker_now().also(texts)

    def split(self, text: str, sent: int = 0, *, end: bool = False) -> tuple[Masked, str]:
        if len(self._refused) != self._seen:  # `masker_now`, inline (a call per delta)
            return self.masker_now().split(text, sent, end=end)
        return self._now.split(text, sent, end=end)

    def stream(self) -> MaskedDeltas:
        """The turn's deltas masked as they come, each piece by the masker of now."""
        return MaskedDeltas(self)
