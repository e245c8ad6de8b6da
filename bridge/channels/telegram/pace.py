"""Pacing per Telegram chat: a small token bucket so one busy chat cannot trip
Telegram's per-chat flood limit (a burst of a few, then about one per second).
The global 30/s and the 20/min group limits are python-telegram-bot's
`AIORateLimiter`. Idle (full) buckets are forgotten, so memory stays bounded.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


class ChatPacer:
    """A token bucket per chat; idle (full) buckets are forgotten."""

    def __init__(
        self,
        burst: int,
        rate_per_s: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self._burst, self._rate = float(burst), rate_per_s
        self._clock, self._sleep = clock, sleep
        self._buckets: dict[int, tuple[float, float]] = {}

    async def wait(self, chat_id: int) -> None:
        if self._rate <= 0:
            return
        while True:
            now = self._clock()
            tokens, at = self._buckets.get(chat_id, (self._burst, now))
            tokens = min(self._burst, tokens + (now - at) * self._rate)
            if tokens >= 1:
                self._buckets[chat_id] = (tokens - 1, now)
                if len(self._buckets) > 4096:
                    self._forget_idle(now)
                return
            self._buckets[chat_id] = (tokens, now)
            await self._sleep((1 - tokens) / self._rate)

    def _forget_idle(self, now: float) -> None:
        full = [
            chat
            for chat, (tokens, at) in self._buckets.items()
            if tokens + (now - at) * self._rate >= self._burst
        ]
        for chat in full:
            del self._buckets[chat]

    def __len__(self) -> int:
        return len(self._buckets)
