"""Waiting in a Telegram reply: the timer seam and the delayed typing indicator.

A short answer is one `sendMessage` and nothing else: the typing indicator
(and the first streamed draft, `telegram_stream`) start only once the answer
has taken longer than a short delay. Every such wait goes through a `Timer`
(`wait(event, seconds)`: until the event is set or the time has passed;
`later(seconds, callback)`: a callback the caller may cancel), so tests
decide when "later" is by firing a fake timer instead of sleeping. A fast
answer costs one timer handle for its typing indicator, cancelled when the
answer ends: no task is made (nor `wait_for`'s own) until the delay has
passed and the indicator is really shown.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Protocol

from bridge.channels.telegram.send import Sender


class Later(Protocol):
    def cancel(self) -> None:
        """The callback is not called (a no-op once it was)."""


class Timer(Protocol):
    async def wait(self, event: asyncio.Event, seconds: float) -> None:
        """Return once `event` is set or `seconds` have passed, whichever is first."""

    def later(self, seconds: float, callback: Callable[[], None]) -> Later:
        """Call `callback` (in the event loop) once `seconds` have passed."""


class LoopTimer:
    """The real timer: the event loop's clock."""

    async def wait(self, event: asyncio.Event, seconds: float) -> None:
        if event.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), seconds)

    def later(self, seconds: float, callback: Callable[[], None]) -> Later:
        return asyncio.get_running_loop().call_later(seconds, callback)


class Typing:
    """Shows "typing" once the block has lasted `delay_s`, then every `every_s`
    until the block ends; a block that ends sooner sends nothing (and made no task
    nor event: only a timer handle, cancelled)."""

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
        self._ended = False  # the block has ended
        self._done: asyncio.Event | None = None  # set when it ends, once typing was shown
        self._later: Later | None = None  # the delay, until it has passed
        self._task: asyncio.Task[None] | None = None  # showing it, once it has

    async def __aenter__(self) -> Typing:
        self._later = self._timer.later(self._delay, self._begin)
        return self

    def _begin(self) -> None:
        self._later = None
        if not self._ended and self._task is None:
            self._done = asyncio.Event()
            self._task = asyncio.create_task(self._loop(self._done))

    async def __aexit__(self, *exc: object) -> None:
        self._ended = True
        if self._done is not None:
            self._done.set()
        if self._later is not None:
            self._later.cancel()
            self._later = None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _loop(self, done: asyncio.Event) -> None:
        while True:
            await self._sender.typing(self._chat)
            await self._timer.wait(done, self._every)
            if done.is_set():
                return
