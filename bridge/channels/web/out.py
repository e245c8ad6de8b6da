"""One open event stream of a running answer, and who is watching each chat.

`Out` writes Server-Sent Events to one page until it goes (checked every
`WATCH_S`: a closed page or a network drop), then tells `Viewers` once.
`Viewers` counts the open streams of each chat; when the last one goes and
none comes back within the grace period (`[web] detach_grace_s`), the chat's
running turn is stopped (`bridge.core.running`), unless `watched` says the
person follows it from another instance (`bridge.channels.web.follow`):
then it is asked again after each further grace period. Used by `web_turns` (the
stream and attach routes) and `web` (`/api/chat` counts as a viewer too).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from bridge.channels.web.push import sse
from bridge.core.running import RunningTurns
from bridge.core.sessions import SessionKey
from bridge.types.progress import ModelInfo, Progress, RetryStep, ToolStep

WATCH_S = 0.5  # how often an open stream checks that its page is still there
SSE_TYPE = "text/event-stream; charset=utf-8"
Watched = Callable[[SessionKey], Awaitable[bool]]  # the chat is followed from elsewhere


def progress_event(report: Progress) -> tuple[str, dict[str, Any]]:
    """A progress report as an SSE event name and its data."""
    if isinstance(report, ToolStep):
        data: dict[str, Any] = {
            "id": report.id,
            "name": report.name,
            "state": report.state,
            "args": report.args,
        }
        if report.state != "start":
            data |= {"result": report.result, "ms": report.ms}
        return "tool", data
    if isinstance(report, RetryStep):
        return "retry", {"attempt": report.attempt, "max": report.max, "reason": report.reason}
    assert isinstance(report, ModelInfo)
    return "info", {"model": report.model}


class Viewers:
    """Open streams per chat; the last one gone for `grace_s` stops the chat's turn
    (while nobody follows it from another instance, `watched`)."""

    def __init__(
        self, running: RunningTurns[SessionKey], grace_s: float, watched: Watched | None = None
    ) -> None:
        self._running, self.grace_s, self._watched = running, grace_s, watched
        self._open: dict[SessionKey, int] = {}
        self._timers: dict[SessionKey, asyncio.Task[None]] = {}

    def enter(self, key: SessionKey) -> None:
        self._open[key] = self._open.get(key, 0) + 1
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    def leave(self, key: SessionKey) -> None:
        left = self._open.get(key, 1) - 1
        if left > 0:
            self._open[key] = left
            return
        self._open.pop(key, None)
        if self._running.running(key) and key not in self._timers:
            self._timers[key] = asyncio.create_task(self._expire(key))

    async def _expire(self, key: SessionKey) -> None:
        try:
            while True:
                await asyncio.sleep(self.grace_s)
                if key in self._open or not self._running.running(key):
                    return
                if self._watched is None or not await self._watched(key):
                    break
            await self._running.stop(key)
        finally:
            if self._timers.get(key) is asyncio.current_task():
                del self._timers[key]

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()


class Out:
    """One open event stream: writes until the page goes, then tells `Viewers` once."""

    def __init__(self, request: web.Request, key: SessionKey, viewers: Viewers) -> None:
        self.response = web.StreamResponse(headers={"Content-Type": SSE_TYPE})
        self._request, self._key, self._viewers = request, key, viewers
        self.gone = False
        self._watch: asyncio.Task[None] | None = None

    async def open(self, headers: dict[str, str]) -> None:
        self.response.headers.update(headers)
        await self.response.prepare(self._request)
        self._viewers.enter(self._key)
        self._watch = asyncio.create_task(self._watching())

    async def _watching(self) -> None:
        while not self.gone:
            transport = self._request.transport
            if transport is None or transport.is_closing():
                self._left()
                return
            await asyncio.sleep(WATCH_S)

    def _left(self) -> None:
        if not self.gone:
            self.gone = True
            self._viewers.leave(self._key)

    async def send(self, event: str, data: dict[str, Any]) -> None:
        if self.gone:
            return
        try:
            await self.response.write(sse(event, data))
        except (ConnectionResetError, RuntimeError):
            self._left()  # the page went away; the turn goes on for the grace period

    async def delta(self, piece: str) -> None:
        await self.send("delta", {"text": piece})

    async def progress(self, report: Progress) -> None:
        await self.send(*progress_event(report))

    async def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        if not self.gone:
            with contextlib.suppress(ConnectionResetError, RuntimeError):
                await self.response.write_eof()
        self._left()
