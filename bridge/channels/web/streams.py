"""Open event streams, counted per page token and per tenant, and ended when a token goes.

Every long-lived response of the web API (`GET /api/events`, `POST
/api/chat/stream`, `GET /api/chat/attach`, `POST /api/chat/edit` and
`/api/chat/regenerate`, and `POST /api/chat` while it waits for its answer)
holds a `Slot` while it is open.
`StreamSlots.open` refuses a new one past `per_token` streams of the same
token or `per_tenant` of the same tenant (the route answers 429), so one
token cannot hold the server's connections. `POST /api/chat` takes an
uncounted slot (`counted=False`): an API client may run more turns at once
than a page holds streams (the connection limits bound it), but its request
is ended with its token all the same. `keep(tokens)` runs after a
config reload replaced the tokens (`WebGate.replace`): every stream opened
with a token no longer configured (a removed tenant, a changed web_token)
is ended at once; `close_all()` ends at shutdown every one that does not answer a
turn of its own (`own_turn`: `POST /api/chat`, its stream, an edit or regeneration):
those end by themselves once `Core.drain` has stopped their turns, answered (a 503, a
`final`), and aiohttp's shutdown waits for them. A slot's `ended`
event is what its stream waits on; `end` also runs the stream's own closer
(closing its connection, for a stream that waits on a turn instead).
Tokens are known here only by a short hash (`WebGate.token_key`).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field


@dataclass(eq=False)
class Slot:
    token: str  # the token's key (a hash), never the token
    tenant: str
    closer: Callable[[], None] | None = None
    counted: bool = True  # against `per_token` / `per_tenant`
    own_turn: bool = False  # it answers a turn of its own: not cut at shutdown
    ended: asyncio.Event = field(default_factory=asyncio.Event)

    def end(self) -> None:
        if self.ended.is_set():
            return
        self.ended.set()
        if self.closer is not None:
            self.closer()


class StreamSlots:
    def __init__(self, per_token: int, per_tenant: int) -> None:
        self.per_token, self.per_tenant = per_token, per_tenant
        self._open: set[Slot] = set()
        self._tokens: Counter[str] = Counter()
        self._tenants: Counter[str] = Counter()
        self.refused = 0

    def count(self, tenant: str) -> int:
        return self._tenants[tenant]

    def waiting(self, tenant: str) -> int:
        """The tenant's open uncounted slots (`POST /api/chat` waiting for answers)."""
        return sum(1 for slot in self._open if slot.tenant == tenant and not slot.counted)

    def open(
        self,
        token: str,
        tenant: str,
        closer: Callable[[], None] | None = None,
        counted: bool = True,
        own_turn: bool = False,
    ) -> Slot | None:
        """A slot for a new stream, or None when the token or the tenant has its fill
        (an uncounted slot is never refused and fills nothing: it is only ended with
        its token)."""
        if counted and (
            self._tokens[token] >= self.per_token or self._tenants[tenant] >= self.per_tenant
        ):
            self.refused += 1
            return None
        slot = Slot(token, tenant, closer, counted, own_turn)
        self._open.add(slot)
        if counted:
            self._tokens[token] += 1
            self._tenants[tenant] += 1
        return slot

    def release(self, slot: Slot) -> None:
        if slot not in self._open:
            return
        self._open.discard(slot)
        if not slot.counted:
            return
        for counter, key in ((self._tokens, slot.token), (self._tenants, slot.tenant)):
            counter[key] -= 1
            if counter[key] <= 0:
                del counter[key]

    def keep(self, tokens: Iterable[str]) -> int:
        """End every stream whose token is not in `tokens`; how many were ended."""
        valid = set(tokens)
        gone = [slot for slot in self._open if slot.token not in valid]
        for slot in gone:
            slot.end()
            self.release(slot)
        return len(gone)

    def close_all(self) -> None:
        """At shutdown: end every stream that does not answer a turn of its own."""
        for slot in list(self._open):
            if not slot.own_turn:
                slot.end()
                self.release(slot)
