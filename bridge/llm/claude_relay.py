"""Tool calls Claude Code makes during a `claude -p` run, run in the turn's own task.

The tool endpoint (`ToolServer`) answers Claude Code's `tools/call` in the
server's own task; `ToolRelay` is the caller it gets: it queues the call and
waits. The backend's read loop (`next_line`), in the turn's task, takes each
queued call while it waits for the CLI's next output line, runs it with the
request's `call_tool` and hands the result back. So a tool runs where the
turn runs: Stop cancels it (a sandbox call kills its helper), the turn's
context variables hold, and the inactivity timeout counts the CLI's silence,
not a tool's work. A call still waiting when the run ends is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib

from bridge.types.backend import ToolCaller

Pending = tuple[str, str, "asyncio.Future[str]"]


class ToolRelay:
    """`ToolCaller` for the endpoint; `next_line` runs what it queued."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Pending] = asyncio.Queue()

    async def __call__(self, name: str, arguments: str) -> str:
        done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((name, arguments, done))
        return await done

    async def next_line(
        self, read: asyncio.Future[bytes], timeout_s: float, call: ToolCaller | None
    ) -> bytes:
        """The CLI's next line (`read`); tool calls that come first are run meanwhile.

        TimeoutError when neither a line nor a call comes for `timeout_s`.
        """
        while True:
            take = asyncio.ensure_future(self._queue.get())
            try:
                async with asyncio.timeout(timeout_s):
                    waits: set[asyncio.Future[object]] = {read, take}  # type: ignore[arg-type]
                    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            except BaseException:
                if take.done() and not take.cancelled():
                    take.result()[2].cancel()  # taken, never to run
                take.cancel()
                raise
            if not take.done():
                take.cancel()
                return read.result()
            await self._run(take.result(), call)

    async def _run(self, pending: Pending, call: ToolCaller | None) -> None:
        name, arguments, done = pending
        if done.done():  # the endpoint gave up on it
            return
        if call is None:
            done.set_result("error: no tools are offered in this step")
            return
        try:
            output = await call(name, arguments)
        except BaseException:
            done.cancel()  # the endpoint answers with an error; the turn's failure goes on
            raise
        if not done.done():
            done.set_result(output)

    def cancel_waiting(self) -> None:
        """The run ended: calls nobody will run are cancelled (their requests fail)."""
        while not self._queue.empty():
            _, _, done = self._queue.get_nowait()
            with contextlib.suppress(asyncio.InvalidStateError):
                done.cancel()
