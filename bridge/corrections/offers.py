"""Pending offers: what a one-tap `/yes <id>` may confirm, per chat, short-lived, bounded.

An offer is made when a reply proposes a change the person must consent to
(keep a correction). It is stored under the chat it was made in — tenant,
channel and chat — so `/yes <id>` from another chat or another tenant finds
nothing. Offers expire after `ttl_s` (default one hour); a chat keeps at most
`per_chat` of them (the oldest goes) and the store at most `max_chats` chats.
Nothing here is written to disk: a restart forgets every offer, which is the
safe way to fail (nothing is stored without a fresh confirmation). An offer
and its confirmation quote the words as `literal` (a Markdown code span).
"""

from __future__ import annotations

import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from bridge.corrections.detect import Correction

ChatKey = tuple[str, str, str]  # tenant, channel, chat
LETTERS, DIGITS = "abcdefghjkmnpqrstuvwxyz", "23456789"


@dataclass(frozen=True, slots=True)
class Offer:
    id: str
    correction: Correction
    made: float  # seconds since the epoch
    msg_id: str  # the message it was found in


def literal(text: str) -> str:
    """`text` on one line as a Markdown code span: every chat shows it character for
    character (no link hides its address, no emphasis eats a character), so a consent
    prompt quoting it shows exactly what would be stored. The fence is one backtick
    longer than the longest run inside; a space pads text that begins or ends with a
    backtick (CommonMark takes one off each side again)."""
    one = " ".join(text.split())
    ticks = "`" * (max((len(r) for r in re.findall(r"`+", one)), default=0) + 1)
    pad = " " if one.startswith("`") or one.endswith("`") else ""
    return f"{ticks}{pad}{one}{pad}{ticks}"


def new_id(taken: set[str]) -> str:
    """Letter, digit, letter, digit ("k3f9"): easy to type, never a word, unique in the chat."""
    while True:
        oid = "".join(secrets.choice(c) for c in (LETTERS, DIGITS, LETTERS, DIGITS))
        if oid not in taken:
            return oid


class Offers:
    def __init__(
        self,
        clock: Callable[[], float] = time.time,
        ttl_s: float = 3600.0,
        per_chat: int = 5,
        max_chats: int = 1024,
    ) -> None:
        self._clock = clock
        self.ttl_s = ttl_s
        self._per_chat = per_chat
        self._max_chats = max_chats
        self._chats: OrderedDict[ChatKey, OrderedDict[str, Offer]] = OrderedDict()

    def add(self, key: ChatKey, correction: Correction, msg_id: str) -> Offer:
        chat = self._live(key)
        if chat is None:
            chat = self._chats[key] = OrderedDict()
        for old in list(chat.values()):
            if old.correction.text == correction.text:
                del chat[old.id]  # the same words again: one offer, the newest
        offer = Offer(new_id(set(chat)), correction, self._clock(), msg_id)
        chat[offer.id] = offer
        while len(chat) > self._per_chat:
            chat.popitem(last=False)
        self._chats.move_to_end(key)
        while len(self._chats) > self._max_chats:
            self._chats.popitem(last=False)
        return offer

    def get(self, key: ChatKey, oid: str) -> Offer | None:
        chat = self._live(key)
        return chat.get(oid.lower()) if chat is not None else None

    def take(self, key: ChatKey, oid: str) -> Offer | None:
        """The offer, removed (it can be confirmed once)."""
        chat = self._live(key)
        if chat is None:
            return None
        offer = chat.pop(oid.lower(), None)
        if not chat:
            del self._chats[key]
        return offer

    def pending(self, key: ChatKey) -> list[Offer]:
        chat = self._live(key)
        return list(chat.values()) if chat is not None else []

    def _live(self, key: ChatKey) -> OrderedDict[str, Offer] | None:
        chat = self._chats.get(key)
        if chat is None:
            return None
        oldest = self._clock() - self.ttl_s
        for oid in [o.id for o in chat.values() if o.made < oldest]:
            del chat[oid]
        if not chat:
            del self._chats[key]
            return None
        return chat

    def __len__(self) -> int:
        return sum(len(c) for c in self._chats.values())
