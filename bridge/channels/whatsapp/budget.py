"""The webhook's body budget: how many bytes the bodies being read may hold, and whose.

Every byte of a webhook body being read (signed or not: the signature is
checked only once the body is complete) is held here until its request
ends. `BodyBudget.take` admits a chunk, or refuses it (the webhook answers
503 with `Retry-After`, so Meta delivers it again):

- all bodies together hold at most `total` bytes (16 MiB);
- a body is small when it declares a `Content-Length` of at most `small`
  (64 KiB; Meta's deliveries are a few KiB); one client's small bodies hold
  at most `small` bytes together, its other bodies at most `per_client`
  (3 MiB, one full body): a client is an IPv4 address, an IPv6 /64 (one
  machine easily holds a whole /64), anything else as given (`client_key`,
  bridge.types.clients, as the web server's connection cap counts them);
- the last `reserve` bytes of `total` (1 MiB) are for small bodies only.

So one address holds at most 3 MiB + 64 KiB and cannot shut Meta out: a
small signed delivery still fits while the address's own big bodies stall
(also from that same address: a reverse proxy). To fill the budget an
attacker needs five clients holding full bodies and sixteen more holding
small ones (or 256 holding small ones only), each refilling its stalled
bodies before the body deadline (10 s) ends them. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

MAX_BODY = 3 * 1024 * 1024  # Meta: a webhook payload is at most 3 MB
BODY_BUDGET = 16 * 1024 * 1024  # all the bodies being read at once, together
RESERVE = 1024 * 1024  # the budget's last part: small bodies only
SMALL_BODY = 64 * 1024  # a body declaring at most this is small


def is_small(declared: int | None, small: int = SMALL_BODY) -> bool:
    """A body that may use the reserve: its declared length is at most `small`
    (a chunked body, without one, never is)."""
    return declared is not None and declared <= small


@dataclass
class BodyBudget:
    total: int = BODY_BUDGET
    per_client: int = MAX_BODY
    reserve: int = RESERVE
    small: int = SMALL_BODY
    reading: int = 0  # bytes held now, by everyone
    _big: Counter[str] = field(default_factory=Counter)  # ... per client, of bodies not small
    _small: Counter[str] = field(default_factory=Counter)  # ... per client, of small bodies

    def of(self, client: str) -> int:
        """The bytes `client`'s bodies hold now."""
        return self._big[client] + self._small[client]

    def fits(self, client: str, small: bool, n: int) -> bool:
        """Whether `n` more bytes of a body of `client` would fit now."""
        if small:
            return self._small[client] + n <= self.small and self.reading + n <= self.total
        return (
            self._big[client] + n <= self.per_client
            and self.reading + n <= self.total - self.reserve
        )

    def take(self, client: str, small: bool, n: int) -> bool:
        """Hold `n` bytes of a body of `client`; False (nothing held) when they do not fit."""
        if not self.fits(client, small, n):
            return False
        self.reading += n
        (self._small if small else self._big)[client] += n
        return True

    def give(self, client: str, small: bool, n: int) -> None:
        """The `n` bytes a body held, given back when its request ends."""
        self.reading -= n
        counts = self._small if small else self._big
        counts[client] -= n
        if counts[client] <= 0:
            del counts[client]
