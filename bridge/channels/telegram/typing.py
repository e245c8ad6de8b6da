"""Waiting in a Telegram reply: the timer seam and the delayed typing indicator.

A short answer is one `sendMessage` and nothing else: the typing indicator
(and the first streamed draft, `telegram_stream`) start only once the answer
has taken longer than a short delay. Every such wait goes through a `Timer`
(`wait(event, seconds)`: until the event is set or the time has passed), so
tests decide when "later" is by firing a fake timer instead of sleeping.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Protocol

from bridge.channels.telegram.send import Sender


class Timer(Protocol):
    async def wait(self, event: asyncio.Event, seconds: float) -> None:
        """Return once `event` is set or `seconds` have passed, whichever is first."""


class LoopTimer:
    """The real timer: the event loop's clock."""

    async def wait(self, event: asyncio.Event, seconds: float) -> None:
        if event.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), seconds)


class Typing:
    """Shows "typing" once the block has lasted `delay_s`, then every `every_s`
    until the block ends; a block that ends sooner sends nothing."""

    def __init__(
        self,
        sender: Sender,
        chat_id: int,
        every_s: float,
        delay_s: float = 0.0,
        timer: Timer | None = None,
    ) -> None:
        self._sender, self._chat, self._every = sender, chat_id, every_s
        self._delay = delay_s
        self._timer = timer or LoopTimer()
        self._done = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Typing:
        self._task = asyncio.create_task(self._loop())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._done.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _loop(self) -> None:
        wait = self._delay
        while True:
            await self._timer.wait(self._done, wait)
            if self._done.is_set():
                return
            await self._sender.typing(self._chat)
            wait = self._every
