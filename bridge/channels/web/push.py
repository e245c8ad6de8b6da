"""Proactive messages for the web page: pushed while it is open, listed on load.

`WebPush` is the web channel's outbox `deliver`: an entry for chat C goes to
every open `GET /api/events?chat=C` stream of the entry's tenant (Server-Sent Events, `message`
events carrying the entry's id, key and text). Delivery to the web succeeds
whether or not a page is open: the entry stays in the outbox (kept for its
retention) and `GET /api/outbox?chat=C&after=ID` lists what a page missed, so
a page loading later shows it, and a page de-duplicates by id. Each stream
has a bounded queue: a page that stops reading loses live pushes (it sees
them on its next load), never the daemon's memory. With `masks` (a tenant's
masker) each pushed text passes the tenant's masker of now once more, as the
listing does: a value put in the vault after the entry was stored (a retried
entry) is not pushed in the clear. `WebPush.stream` is the
route's body: one `ready` event, then a `message` per push and a keep-alive
comment every `KEEPALIVE_S`, until the page goes (seen within `WATCH_S`, so
its slot of `web_streams` is free again at once) or the server ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from aiohttp import web

from bridge.schedule.outbox import OutboxEntry
from bridge.types.masked import TextMask

QUEUE_SIZE = 100
KEEPALIVE_S = 25.0
WATCH_S = 0.5  # how often an idle stream checks that its page is still there


def message_of(entry: OutboxEntry) -> dict[str, Any]:
    return {"id": entry.id, "key": entry.key, "text": entry.text, "at_ms": entry.created_ms}


def sse(event: str, data: dict[str, Any]) -> bytes:
    payload = json.dumps(data, ensure_ascii=False)
    return f"event: {event}\ndata: {payload}\n\n".encode()


class WebPush:
    """Open event streams per chat; `__call__(entry)` pushes to them."""

    def __init__(
        self, queue_size: int = QUEUE_SIZE, masks: Callable[[str], TextMask] | None = None
    ) -> None:
        self._streams: dict[tuple[str, str], set[asyncio.Queue[dict[str, Any]]]] = defaultdict(set)
        self._size = queue_size
        self._masks = masks

    def listeners(self, chat: str) -> int:
        return sum(len(queues) for (_, c), queues in self._streams.items() if c == chat)

    async def __call__(self, entry: OutboxEntry) -> None:
        queues = list(self._streams.get((entry.tenant, entry.chat), ()))
        if not queues:
            return
        message = message_of(entry)
        if self._masks is not None:
            message["text"] = self._masks(entry.tenant).mask(entry.text)
        for queue in queues:
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(message)

    @contextlib.asynccontextmanager
    async def listen(self, tenant: str, chat: str) -> AsyncIterator[asyncio.Queue[dict[str, Any]]]:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(self._size)
        self._streams[tenant, chat].add(queue)
        try:
            yield queue
        finally:
            self._streams[tenant, chat].discard(queue)
            if not self._streams[tenant, chat]:
                del self._streams[tenant, chat]

    async def stream(
        self,
        request: web.Request,
        tenant: str,
        chat: str,
        closing: asyncio.Event,
        headers: Mapping[str, str],
    ) -> web.StreamResponse:
        """Server-Sent Events for `chat` while the page reads them (until `closing`)."""
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream; charset=utf-8", **headers}
        )
        await response.prepare(request)
        loop = asyncio.get_running_loop()
        async with self.listen(tenant, chat) as queue:
            try:
                await response.write(sse("ready", {"chat": chat}))
                wrote = loop.time()
                while not closing.is_set() and _connected(request):
                    message = await _next(queue, closing)
                    if message is not None:
                        await response.write(sse("message", message))
                    elif loop.time() - wrote >= KEEPALIVE_S:
                        await response.write(b": keep-alive\n\n")
                    else:
                        continue
                    wrote = loop.time()
            except (ConnectionResetError, RuntimeError):
                pass  # the page went away
        return response


def _connected(request: web.Request) -> bool:
    transport = request.transport
    return transport is not None and not transport.is_closing()


async def _next(
    queue: asyncio.Queue[dict[str, Any]], closing: asyncio.Event
) -> dict[str, Any] | None:
    """The next message, or None after `WATCH_S` (to see whether the page is still
    there: a gone page's stream ends within it) or at shutdown."""
    getter = asyncio.ensure_future(queue.get())
    closed = asyncio.ensure_future(closing.wait())
    try:
        done, _ = await asyncio.wait(
            (getter, closed), timeout=WATCH_S, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        closed.cancel()
        if not getter.done():
            getter.cancel()
    return getter.result() if getter in done else None
