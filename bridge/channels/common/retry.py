"""Retries with backoff, for any platform's HTTP client (pure).

`Backoff(first_s, max_s, attempts)`: the wait before retry n (1-based) is
first_s * 2^(n-1), at most max_s, and never shorter than what the server
asked for (`Retry-After`, capped at `longest_s` so a hostile or broken
header cannot park a reply for hours). `attempts` counts the first try.
`retry_after_s` reads the header's delta-seconds form (an HTTP date, which
chat APIs do not send, counts as absent).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Backoff:
    first_s: float = 0.5
    max_s: float = 8.0
    attempts: int = 4  # tries in all, the first included
    longest_s: float = 60.0  # the most a Retry-After is honoured

    def delay(self, retry: int, asked_s: float | None = None) -> float:
        """Seconds to wait before retry number `retry` (1 = the first retry)."""
        wait: float = min(self.max_s, self.first_s * 2.0 ** max(0, retry - 1))
        if asked_s is not None and asked_s > 0:
            wait = max(wait, min(asked_s, self.longest_s))
        return wait

    def once(self) -> Backoff:
        """The same policy with one try only (the outbox retries across restarts)."""
        return Backoff(self.first_s, self.max_s, 1, self.longest_s)


def retry_after_s(value: str | None) -> float | None:
    """`Retry-After` as seconds (delta form only); None when absent or not a number."""
    if not value or len(value) > 16:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None
