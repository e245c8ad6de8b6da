"""The web page's running answers: stream one, stop it, attach to it, start anew.

Routes (bearer token, scoped to its tenant; `chat` as in `/api/chat`):
`POST /api/chat/stream` (Server-Sent Events: `info` {model}, `delta` {text},
`tool` {id, name, state, args, result, ms}, `retry` {attempt, max, reason},
then one `final` {text, kind, files?}); `POST /api/chat/stop {"chat"}` ->
`{"stopped": bool}` (the turn is cancelled on the server, its partial answer
kept, marked; `bridge.core.running`); `GET /api/chat/attach?chat=C` -> the
same event stream for the turn running now, opened by one `delta` with the
text so far (204 when nothing runs); `POST /api/chat/new {"chat"}` -> stops
what runs, sends a real `/reset` through the core (the model forgets; the
old conversation stays readable) and returns `{"conversation": NEWID}`.

`Viewers` counts the open streams of each chat; when the last one goes
(the page closed, a network drop: seen within `WATCH_S`) and none comes
back within the grace period (`[web] detach_grace_s`), the turn is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from aiohttp import web

from bridge.channels.web_gate import ChatOnly, WebGate
from bridge.channels.web_input import ChatRequest
from bridge.channels.web_push import sse
from bridge.channels.web_upload import WebUploads, claim_for
from bridge.core.conversations import ConversationArchive
from bridge.core.running import RunningTurns
from bridge.core.sessions import SessionKey
from bridge.types.messages import Attachment, DeltaSink, Final, Inbound
from bridge.types.progress import ModelInfo, Progress, ProgressSink, RetryStep, ToolStep

WATCH_S = 0.5  # how often an open stream checks that its page is still there
SSE_TYPE = "text/event-stream; charset=utf-8"


class ProgressHandle(Protocol):
    """The core's `handle` with its progress sink."""

    def __call__(
        self, inbound: Inbound, on_delta: DeltaSink | None, on_progress: ProgressSink | None
    ) -> Awaitable[Final]: ...


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
    """Open streams per chat; the last one gone for `grace_s` stops the chat's turn."""

    def __init__(self, running: RunningTurns[SessionKey], grace_s: float) -> None:
        self._running, self.grace_s = running, grace_s
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
            await asyncio.sleep(self.grace_s)
            if key not in self._open:
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


class WebTurns:
    """The routes above, over the core's `handle`, its running turns and the archive."""

    def __init__(
        self,
        gate: WebGate,
        handle: ProgressHandle,
        running: RunningTurns[SessionKey],
        archive: ConversationArchive | None,
        final_json: Callable[[Final, str], dict[str, Any]],  # the reply, to this tenant
        headers: dict[str, str],
        grace_s: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._gate, self._handle, self._running = gate, handle, running
        self._archive, self._final, self._headers = archive, final_json, headers
        self.viewers = Viewers(running, grace_s)
        self._clock = clock
        self.uploads: WebUploads | None = None  # set by the channel when it takes uploads

    def mount(self, app: web.Application) -> None:
        app.router.add_post("/api/chat/stream", self.stream)
        app.router.add_post("/api/chat/stop", self.stop)
        app.router.add_post("/api/chat/new", self.new)
        app.router.add_get("/api/chat/attach", self.attach)

    def inbound(
        self, tenant: str, req: ChatRequest, attachments: tuple[Attachment, ...] = ()
    ) -> Inbound:
        identity = self._gate.identity(tenant)
        msg_id = uuid.uuid4().hex
        return Inbound(
            "web", identity, req.chat, req.text, msg_id, quoted=req.quote, attachments=attachments
        )

    def attachments(self, tenant: str, req: ChatRequest) -> tuple[Attachment, ...] | web.Response:
        """The body's upload ids as the tenant's `Attachment`s (400 for an unknown one)."""
        return claim_for(self.uploads, tenant, req.attachments)

    async def stream(self, request: web.Request) -> web.StreamResponse:
        tenant = self._gate.tenant(request)
        if tenant is None:
            return self._gate.deny()
        parsed = await self._gate.body(request, ChatRequest, '{"text": "hello"}')
        if isinstance(parsed, web.Response):
            return parsed
        files = self.attachments(tenant, parsed)
        if isinstance(files, web.Response):
            return files
        out = Out(request, SessionKey(tenant, "web", parsed.chat), self.viewers)
        await out.open(self._headers)
        try:
            inbound = self.inbound(tenant, parsed, files)
            final = await self._handle(inbound, out.delta, out.progress)
            await out.send("final", self._final(final, tenant))
        finally:
            await out.close()
        return out.response

    async def attach(self, request: web.Request) -> web.StreamResponse:
        key = self._gate.key(request)
        if isinstance(key, web.Response):
            return key
        attached = self._running.attach(key)
        if attached is None:
            return web.Response(status=204)
        out = Out(request, key, self.viewers)
        try:
            await out.open(self._headers)
            await out.delta(attached.text)
            async for event in attached.events():
                if event[0] == "delta":
                    await out.delta(event[1])
                elif event[0] == "progress":
                    await out.progress(event[1])
                else:
                    await out.send("final", self._final(event[1], key.tenant))
        finally:
            self._running.detach(key, attached)
            await out.close()
        return out.response

    async def _key(self, request: web.Request) -> SessionKey | web.Response:
        tenant = self._gate.tenant(request)
        if tenant is None:
            return self._gate.deny()
        parsed = await self._gate.body(request, ChatOnly, '{"chat": "default"}')
        if isinstance(parsed, web.Response):
            return parsed
        return SessionKey(tenant, "web", parsed.chat)

    async def stop(self, request: web.Request) -> web.Response:
        key = await self._key(request)
        if isinstance(key, web.Response):
            return key
        return web.json_response({"stopped": await self._running.stop(key)})

    async def new(self, request: web.Request) -> web.Response:
        key = await self._key(request)
        if isinstance(key, web.Response):
            return key
        await self._running.stop(key)
        identity = self._gate.identity(key.tenant)
        reset = Inbound("web", identity, key.chat, "/reset", uuid.uuid4().hex)
        final = await self._handle(reset, None, None)
        if final.kind != "command":
            return web.json_response({"error": final.text or "the chat was not reset"}, status=500)
        now = self._clock()
        ident = self._archive.current(key, now) if self._archive is not None else None
        return web.json_response({"conversation": ident})
