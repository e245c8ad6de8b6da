"""A `Timer` the test fires: "later" comes when the test says so, never after a sleep."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable


class Pending:
    """A callback `ManualTimer.later` holds until the next `fire()`."""

    def __init__(self, timer: ManualTimer, callback: Callable[[], None]) -> None:
        self._timer, self.callback = timer, callback

    def cancel(self) -> None:
        self._timer._cancel(self)


class ManualTimer:
    """Each `wait(event, seconds)` returns when its event is set or at the next `fire()`,
    and each `later(seconds, callback)` is called at the next `fire()` unless cancelled;
    `waiting` counts the waits and callbacks that the next `fire()` ends (those begun
    since the last one), so a test can wait until every waiter is back before it fires
    again; `cancelled` counts the callbacks cancelled before they were due."""

    def __init__(self) -> None:
        self._fired = asyncio.Event()
        self._later: list[Pending] = []
        self.waiting = 0
        self.fired = 0
        self.cancelled = 0

    def later(self, seconds: float, callback: Callable[[], None]) -> Pending:
        pending = Pending(self, callback)
        self._later.append(pending)
        self.waiting += 1
        return pending

    def _cancel(self, pending: Pending) -> None:
        if pending in self._later:
            self._later.remove(pending)
            self.waiting -= 1
            self.cancelled += 1

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
        due, self._later = self._later, []
        for pending in due:
            pending.callback()


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
