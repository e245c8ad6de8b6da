"""What every HTTP model backend does the same way: retries and inactivity timeouts.

`RetryLoop.run` drives one streamed attempt after another: a `Retry` raised
before anything was yielded is retried with exponential backoff and jitter
(honouring `Retry-After`, at most `max_retries` times); after the answer has
started it is a failure, because half an answer is never replayed. Before
each wait it yields `Retrying(attempt, max, reason)` (a progress display
shows "the model server is busy, retrying 1/3").

Timeouts are about silence, never about the length of an answer: `read_chunk`
and `within` wait at most `timeout_s` for the next bytes (the response
headers, the next piece of the body); `read_body` reads a whole body that
way, chunk by chunk, and stops at a byte cap (counted after decompression:
`TooLarge`). A slow model that keeps sending is never cut off; one that goes
silent for `timeout_s` fails with `silent()`. A streamed answer is read
through an `IdleTimer`: any bytes restart its silence, but bytes that say
nothing (keep-alive comments, pings, events without text or a tool call: the
caller calls `progress()` only for an event that said something) are allowed
only `KEEPALIVE_FACTOR` times `timeout_s` (20 minutes at the default 120 s: a
provider like OpenRouter sends comments while a model thinks for minutes),
then fail (`chatter()`) instead of holding the turn forever (`data: {}` every
second had held one for good). One event still arriving is not progress
either: a server could begin a new one in every chunk.
Nothing here knows a wire format.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from bridge.llm.faults import ServerFault
from bridge.llm.http_retry import CANNOT_CONNECT, Retry, retry_reason
from bridge.types.backend import BackendError, ModelEvent, Retrying

if TYPE_CHECKING:  # aiohttp is imported when a request is made
    import aiohttp

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[Any]]
Attempt = Callable[[], AsyncGenerator[ModelEvent, None]]
T = TypeVar("T")
_STATUS = re.compile(r"HTTP (\d{3})\b")


def silent(timeout_s: float, started: bool) -> BackendError:
    """The inactivity timeout: nothing arrived for `timeout_s` seconds."""
    where = "mid-answer" if started else "before answering"
    text = f"the model server sent nothing for {timeout_s:g}s {where}"
    return ServerFault("timeout", text, text)


async def within(timeout_s: float, started: bool, awaitable: Awaitable[T]) -> T:
    """Await `awaitable` unless `timeout_s` pass without it finishing."""
    try:
        async with asyncio.timeout(timeout_s):
            return await awaitable
    except TimeoutError as exc:
        raise silent(timeout_s, started) from exc


async def read_chunk(response: aiohttp.ClientResponse, timeout_s: float, started: bool) -> bytes:
    """The next bytes of the body (b"" at its end), or the inactivity timeout."""
    return await within(timeout_s, started, response.content.readany())


KEEPALIVE_FACTOR = 10  # keep-alives alone may hold a streamed answer this many timeouts


def chatter(waited_s: float) -> BackendError:
    """The timeout of a server that sent only keep-alives for `waited_s`."""
    text = (
        f"the model server sent only keep-alives, no answer, for {waited_s:g}s mid-answer"
        " (comments or events that said nothing)"
    )
    return ServerFault("timeout", text, text)


class TooLarge(Exception):
    """A body grew past its byte cap (the caller says what that means)."""


async def read_body(
    response: aiohttp.ClientResponse,
    timeout_s: float,
    started: bool,
    limit: int,
    *,
    truncate: bool = False,
) -> bytes:
    """The whole body, chunk by chunk: `timeout_s` bounds each silence, not the total.

    More than `limit` bytes (after any Content-Encoding was undone) raise
    `TooLarge`, or with `truncate` return the first `limit` bytes.
    """
    parts: list[bytes] = []
    size = 0
    while True:
        chunk = await read_chunk(response, timeout_s, started)
        if not chunk:
            return b"".join(parts)
        size += len(chunk)
        if size > limit:
            if truncate:
                parts.append(chunk[: len(chunk) - (size - limit)])
                return b"".join(parts)
            raise TooLarge(f"the body is larger than {limit} bytes")
        parts.append(chunk)


class IdleTimer:
    """The inactivity timeouts of one streamed body: `timeout_s` of silence (any bytes
    restart it), and `KEEPALIVE_FACTOR` times that without `progress()` (keep-alives).

    Only the time spent waiting for bytes counts: a caller that takes its
    time between reads (running a tool, say) never makes the server look silent.
    """

    def __init__(self, timeout_s: float, started: bool = True) -> None:
        self.timeout_s = timeout_s
        self.keepalive_s = KEEPALIVE_FACTOR * timeout_s
        self.started = started
        self._silent = 0.0  # seconds spent waiting since the last bytes
        self._idle = 0.0  # seconds spent waiting since the last progress

    def progress(self) -> None:
        self._idle = 0.0

    async def read(self, response: aiohttp.ClientResponse) -> bytes:
        """The next bytes (b"" at the end), unless a timeout passed first."""
        loop = asyncio.get_running_loop()
        left = min(self.timeout_s - self._silent, self.keepalive_s - self._idle)
        began = loop.time()
        try:
            if left <= 0:
                raise TimeoutError
            async with asyncio.timeout(left):
                chunk = await response.content.readany()
        except TimeoutError as exc:
            if self.keepalive_s - self._idle <= self.timeout_s - self._silent:
                raise chatter(self.keepalive_s) from exc
            raise silent(self.timeout_s, self.started) from exc
        finally:
            waited = loop.time() - began
            self._silent += waited
            self._idle += waited
        if chunk:
            self._silent = 0.0
        return chunk


def attempts_text(attempts: int) -> str:
    return f"{attempts} attempt" + ("s" if attempts != 1 else "")


def unavailable_text(detail: str, attempts: int, who: str = "the model server") -> str:
    """What went wrong, in words that match it: a server that answered with an error
    status was reached; one that refused the connection was not. Only roost's own
    words and an HTTP status: never the server's message (`detail` may carry it)."""
    tries = attempts_text(attempts)
    status = _STATUS.match(detail)
    if status:
        return f"{who} answered with an error (HTTP {status.group(1)}, {tries}); try again later"
    if detail == CANNOT_CONNECT:
        return f"{who} cannot be reached right now ({tries})"
    if " in the stream:" in detail:  # an error event where the answer should be
        return f"{who} reported an error instead of answering ({tries}); try again later"
    return f"the connection to {who} broke before it answered ({tries}); please ask again"


def default_exhausted(exc: Retry, attempts: int) -> BackendError:
    """The message once the retries are used up (OpenAI-compatible servers); the log's
    line also has what the server said of its last error (the person never sees it)."""
    detail = f"{exc.detail}, {attempts_text(attempts)}"
    logged = f"{detail}; the server said: {exc.said}" if exc.said else detail
    if exc.kind == "rate_limited":
        return ServerFault(
            "rate_limited",
            f"the model server is rate-limiting requests ({detail}); try again in a minute",
            logged,
        )
    return ServerFault("unavailable", unavailable_text(exc.detail, attempts), logged)


@dataclass
class RetryLoop:
    """Retry policy plus the injected sleep and randomness (tests pass their own)."""

    host: str
    max_retries: int = 3
    backoff_base_s: float = 1.0
    max_backoff_s: float = 30.0
    sleep: Sleep = asyncio.sleep
    rng: random.Random = field(default_factory=random.Random)
    exhausted: Callable[[Retry, int], BackendError] = default_exhausted

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_backoff_s)
        ceiling = min(self.max_backoff_s, self.backoff_base_s * 2.0**attempt)
        return ceiling * (0.5 + 0.5 * self.rng.random())  # "equal jitter"

    async def run(self, attempt: Attempt) -> AsyncGenerator[ModelEvent, None]:
        tries = 0
        limit = max(0, self.max_retries)
        while True:
            yielded = False
            try:
                async with aclosing(attempt()) as events:
                    async for event in events:
                        yielded = True
                        yield event
                return
            except Retry as exc:
                if yielded:
                    raise ServerFault(
                        "unavailable",
                        "the connection to the model server broke mid-answer; please ask again",
                        f"{exc.detail} after the answer had started",
                    ) from exc
                if tries >= limit:
                    raise self.exhausted(exc, tries + 1) from exc
                delay = self.delay(tries, exc.retry_after)
                log.warning(
                    "model server %s: %s; retry %d/%d in %.2fs",
                    self.host,
                    exc.detail,
                    tries + 1,
                    limit,
                    delay,
                )
                yield Retrying(tries + 1, limit, retry_reason(exc.kind, exc.detail))
                await self.sleep(delay)
                tries += 1
