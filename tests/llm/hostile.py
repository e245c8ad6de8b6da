"""A hostile model server on 127.0.0.1 for tests: one handler answers every request.

`async with Hostile(handler) as server:` serves `handler(request)` for any
method and path (`server.base_url` ends in `/v1`, as OpenAI-compatible bases
do; the Anthropic backend adds `/v1/messages` to `server.origin`).
`server.hits` counts the requests that reached it. `sse_head` starts an
event-stream response; `frame` is one `data:` event of a
`chat.completion.chunk`; `write` sends bytes and returns False once the
client has gone away (the handler then stops). `Roosts` builds whole
roosts (the real core and storage) on the real `OpenAIBackend`, for tests
that check what a person reads.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from bridge.app.build import build
from bridge.core.config import Settings
from bridge.llm.anthropic import AnthropicBackend
from bridge.llm.openai import OpenAIBackend
from bridge.types.audit_sink import MemoryAudit
from bridge.types.backend import ModelEvent
from tests.llm.support import KEY, MODEL, collect

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Hostile:
    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self._runner: web.AppRunner | None = None
        self.hits = 0
        self.origin = ""
        self.base_url = ""

    async def __aenter__(self) -> Hostile:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(
            app, handler_cancellation=True, shutdown_timeout=1.0, access_log=None
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.origin = f"http://127.0.0.1:{port}"
        self.base_url = f"{self.origin}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.hits += 1
        await request.read()
        return await self._handler(request)


async def sse_head(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    return resp


def frame(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    """`data: {chat.completion.chunk}` and the blank line that ends the event."""
    chunk = {
        "id": "chatcmpl-hostile",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


async def write(resp: web.StreamResponse, data: bytes) -> bool:
    """Send `data`; False when the client has hung up."""
    try:
        await resp.write(data)
    except (ConnectionError, RuntimeError):
        return False
    return True


async def finish(resp: web.StreamResponse, *frames: bytes) -> web.StreamResponse:
    """Send the last frames, `data: [DONE]` and end the body (if the client still listens)."""
    for data in (*frames, b"data: [DONE]\n\n"):
        if not await write(resp, data):
            return resp
    with contextlib.suppress(ConnectionError, RuntimeError):
        await resp.write_eof()
    return resp


async def _no_sleep(seconds: float) -> None:
    return None


class Roosts:
    """`await roosts.at(base_url)`: a roost whose model is the server at `base_url`."""

    def __init__(self, settings: Settings, clock: Any) -> None:
        self._settings = settings
        self._clock = clock
        self._made: list[Any] = []

    async def at(self, base_url: str, **kw: Any) -> Any:
        backend = OpenAIBackend(base_url, KEY, MODEL, sleep=_no_sleep, **kw)
        roost = await build(self._settings, backend=backend, audit=MemoryAudit(), clock=self._clock)
        self._made.append(roost)
        return roost

    async def aclose(self) -> None:
        for roost in self._made:
            await roost.aclose()


async def collect_anthropic(origin: str, **options: Any) -> list[ModelEvent]:
    """One request's events from an Anthropic backend pointed at `origin`, the backend
    closed after (what each hostile-Anthropic test needs)."""
    backend = AnthropicBackend("sk-ant-test-key", "claude-test", base_url=origin, **options)
    try:
        return await collect(backend)
    finally:
        await backend.aclose()
