"""Keeping the Telegram channel connected, in the background.

`Connection.start()` starts a supervisor task and returns once its first
attempt has ended - connected, or failed and said why - so the daemon goes
on (READY=1, the web page, the terminal) whatever Telegram does. A failed
attempt (unreachable Bot API, a bad `getMe`, a refused token, a webhook
that cannot be set) is retried with capped exponential backoff and jitter
(`Backoff`), one log line per change of state (`Health`).

Once connected, python-telegram-bot's polling loop retries on its own
(doubling by 1.5 up to 30 s); `PollWatch`, the request object of
`getUpdates`, reports each answer: an error reaches `Health` through the
polling error callback, a good answer turns the channel up again. A 401 on
`getUpdates` (the token was revoked while running) is raised as
`TokenRefused`, a network-kind error, so the library keeps retrying
instead of ending its polling loop for good. `PollWatch` also hands every
good answer's body to `received` (the durable inbox) before the library
sees it: the updates are committed before the next `getUpdates` confirms
them. When they cannot be stored, the answer is treated as a network error
(`InboxUnavailable`): the library waits and asks again, nothing is confirmed.
The body is parsed once: `received` gets the library's own parse of it
(`parse_json_payload`), which the library then reads instead of parsing the
same bytes again.
A Bot API that answers `getUpdates` at once with nothing (a proxy or an
emulator that does not long-poll) would have the library ask again at once,
hundreds of times a second: `EmptyPolls` spaces such answers out (50 ms,
doubling to 1 s) and forgets the delay at the first update or the first
answer that really waited.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

from telegram.request import HTTPXRequest

from bridge.channels.common.tls import verified
from bridge.channels.telegram.health import (
    Backoff,
    Health,
    InboxUnavailable,
    TokenRefused,
    why,
)
from bridge.core.diskfull import disk_full

log = logging.getLogger("bridge.channels.telegram.channel")


class EmptyPolls:
    """How long to wait after a `getUpdates` answer: nothing, unless the answer was
    empty and came back quicker than `quick_s` (the server did not long-poll)."""

    def __init__(self, first_s: float = 0.05, cap_s: float = 1.0, quick_s: float = 0.5) -> None:
        self._first, self._cap, self._quick = first_s, cap_s, quick_s
        self._next = 0.0

    def after(self, empty: bool, took_s: float) -> float:
        if not empty or took_s >= self._quick:
            self._next = 0.0
            return 0.0
        self._next = min(self._cap, self._next * 2 if self._next else self._first)
        return self._next


def _empty(code: int, payload: bytes) -> bool:
    """A good answer without updates (`{"ok":true,"result":[]}`, any spacing)."""
    return code == 200 and payload.replace(b" ", b"").endswith(b'"result":[]}')


class PollWatch(HTTPXRequest):
    """The `getUpdates` request: tells `seen(status)` of every answer and hands a
    good answer's body, parsed, to `received` before the library reads it (the
    same parse: `parse_json_payload` answers it for those bytes)."""

    def __init__(
        self,
        seen: Callable[[int], None],
        received: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
        *,
        empty: EmptyPolls | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(connection_pool_size=1, httpx_kwargs={"verify": verified()})
        self._seen = seen
        self.received = received
        self._empty, self._sleep, self._clock = empty or EmptyPolls(), sleep, clock
        self._parsed: tuple[bytes, dict[str, Any]] | None = None  # the last body given `received`

    def parse_json_payload(self, payload: bytes) -> dict[str, Any]:  # type: ignore[override]
        """The library's parse of an answer; the one `received` got for these bytes."""
        parsed, self._parsed = self._parsed, None
        if parsed is not None and parsed[0] is payload:
            return parsed[1]
        return HTTPXRequest.parse_json_payload(payload)

    async def do_request(self, *args: Any, **kwargs: Any) -> tuple[int, bytes]:
        asked = self._clock()
        code, payload = await super().do_request(*args, **kwargs)
        wait = self._empty.after(_empty(code, payload), self._clock() - asked)
        if wait:
            await self._sleep(wait)
        if code == 401:
            self._seen(code)
            raise TokenRefused("Unauthorized")
        if code == 200 and self.received is not None:
            try:
                body = HTTPXRequest.parse_json_payload(payload)
                await self.received(body)
                self._parsed = (payload, body)
            except Exception as exc:  # logged by `Health`, once per change (not per try)
                raise InboxUnavailable(_not_stored(exc)) from exc
        self._seen(code)  # after the store: an answer that could not be kept is no "up"
        return code, payload


def _not_stored(exc: BaseException) -> str:
    """Why updates could not be stored, for the log and `/status` (no path, no text)."""
    if disk_full(exc):
        return "updates could not be stored: the disk is full"
    return f"updates could not be stored ({type(exc).__name__})"


class Connection:
    """Runs `connect` until it succeeds (then reports `Health` up with the
    detail it returns); `disconnect` undoes a half-done attempt."""

    def __init__(
        self,
        connect: Callable[[], Awaitable[str]],
        disconnect: Callable[[], Awaitable[None]],
        token: str,
        backoff: Backoff,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self._connect, self._disconnect = connect, disconnect
        self._token, self._backoff, self._rng = token, backoff, rng
        self.health = Health()
        self.connected = False
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._supervise(), name="telegram-connection")
        settled = asyncio.create_task(self.health.settled.wait())
        await asyncio.wait({self._task, settled}, return_when=asyncio.FIRST_COMPLETED)
        settled.cancel()
        if self._task.done():
            self._task.result()  # an unexpected failure of the supervisor itself

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.connected = False
        self.health.stopped()

    def polled(self, status: int) -> None:
        """`PollWatch`: a getUpdates answer arrived with this HTTP status."""
        if status == 200 and self.connected:
            self.health.up(self.health.detail)

    def polling_failed(self, exc: Exception) -> None:
        """The library's polling loop failed once; it retries by itself."""
        self.health.failing(why(exc, self._token), None, type(exc).__name__)

    async def _supervise(self) -> None:
        attempt = 0
        while True:
            try:
                detail = await self._connect()
            except Exception as exc:  # any failure is retried; none ends the daemon
                attempt += 1
                delay = self._backoff.delay(attempt, self._rng)
                self.health.failing(why(exc, self._token), delay, type(exc).__name__)
                log.debug("telegram: connect attempt %d failed", attempt, exc_info=True)
                with contextlib.suppress(Exception):
                    await self._disconnect()
                await asyncio.sleep(delay)
                continue
            self.connected = True
            self.health.up(detail)
            return
