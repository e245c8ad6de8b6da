"""How a test waits: for a signal (a reply, a line, a row, a counter), never for a time.

`HANG_S` is the only bound: generous, it ends a test that would otherwise hang
(a dead process, a lost message) and says what never came; it is no speed
check. A machine 20 times slower than a quiet one still passes (`make test`
on a busy 2-core box took 42 minutes once). `until` polls a predicate; a
wait on a future or a stream uses `asyncio.wait_for(..., HANG_S)`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Callable

HANG_S = 300.0


async def until(predicate: Callable[[], object], what: str = "the condition") -> None:
    """Wait until `predicate()` is true (it may return an awaitable of that, e.g. a
    database query); AssertionError naming `what` after HANG_S."""
    deadline = time.monotonic() + HANG_S
    while True:
        got = predicate()
        if await got if inspect.isawaitable(got) else got:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {HANG_S:g} s (a hang)")
        await asyncio.sleep(0.01)


async def shut(writer: asyncio.StreamWriter) -> None:
    """A raw connection closed, its socket with it, before the test's loop ends: a
    writer only `close()`d at a test's end may still hold its socket when the loop
    closes, and its ResourceWarning then fails whichever later test the collector
    runs in."""
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
