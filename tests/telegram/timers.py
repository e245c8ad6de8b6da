"""A `Timer` the test fires: "later" comes when the test says so, never after a sleep."""

from __future__ import annotations

import asyncio
import contextlib


class ManualTimer:
    """Each `wait(event, seconds)` returns when its event is set or at the next `fire()`;
    `waiting` counts the waits that the next `fire()` ends (those begun since the last
    one), so a test can wait until every waiter is back before it fires again."""

    def __init__(self) -> None:
        self._fired = asyncio.Event()
        self.waiting = 0
        self.fired = 0

    async def wait(self, event: asyncio.Event, seconds: float) -> None:
        if event.is_set():
            return
        fired = self._fired
        self.waiting += 1
        waits = {asyncio.ensure_future(event.wait()), asyncio.ensure_future(fired.wait())}
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if fired is self._fired:  # not ended by a fire (that set `waiting` to 0)
                self.waiting -= 1
            for waiter in waits:
                waiter.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await waiter

    def fire(self) -> None:
        """Every wait in progress ends now; later waits wait for the next fire."""
        self.fired += 1
        self.waiting = 0
        self._fired.set()
        self._fired = asyncio.Event()


class Gate:
    """A model that streams `first`, then waits at the gate until `open()` (or until the
    turn is cancelled), then streams `rest`. `reached` is set once it waits there."""

    name = "gated"

    def __init__(self, first: str, rest: str = "") -> None:
        self.first, self.rest = first, rest
        self.reached = asyncio.Event()
        self._open = asyncio.Event()
        self.requests = 0

    def describe(self) -> str:
        return "gated test model"

    def open(self) -> None:
        self._open.set()

    async def stream(self, request: object):  # type: ignore[no-untyped-def]
        from bridge.types.backend import Finish, TextDelta

        self.requests += 1
        if self.requests > 1:  # later turns answer at once
            yield TextDelta(f"answer {self.requests}")
            yield Finish("stop")
            return
        yield TextDelta(self.first)
        self.reached.set()
        await self._open.wait()
        if self.rest:
            yield TextDelta(self.rest)
        yield Finish("stop")

    async def aclose(self) -> None:
        return None
