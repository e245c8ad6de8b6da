"""Masked text for tests that write a store directly (stores take only `Masked`)."""

from __future__ import annotations

from collections.abc import Iterable

from bridge.loadout.mask import Masker
from bridge.types.backend import ChatMessage
from bridge.types.masked import Masked

NO_SECRETS = Masker({})


def m(text: str) -> Masked:
    """`text` through a masker that knows no secrets (what a tenant without a vault gets)."""
    return NO_SECRETS.mask(text)


def masked_steps(messages: Iterable[ChatMessage]) -> tuple[ChatMessage, ...]:
    return tuple(NO_SECRETS.message(message) for message in messages)


class CountingMasker:
    """A masker that counts its calls (what a cache of masked text saves)."""

    def __init__(self, masker: Masker) -> None:
        self.masker, self.calls = masker, 0

    def mask(self, text: str) -> str:
        self.calls += 1
        return self.masker.mask(text)
