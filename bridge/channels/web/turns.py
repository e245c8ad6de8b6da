"""The web page's running answers: stream one, stop it, attach to it, start anew.

Routes (bearer token, scoped to its tenant; `chat` as in `/api/chat`):
`POST /api/chat/stream` (Server-Sent Events: `info` {model}, `delta` {text},
`tool` {id, name, state, args, result, ms}, `retry` {attempt, max, reason},
then one `final` {text, kind, files?}); `POST /api/chat/stop {"chat"}` ->
`{"stopped": bool, "where": "here" | "elsewhere" | "nowhere"}` (here: the
turn was cancelled on this server and has ended, its partial answer kept,
marked, `bridge.core.running`; elsewhere: another instance runs it and was
asked to stop it, `bridge.channels.web.relay`; nowhere: nothing runs);
`GET /api/chat/attach?chat=C` -> the same event stream for the turn running
now, opened by one `delta` with the text so far (204 when nothing runs);
when the turn runs on another instance (instances sharing the home, the
chat's lease held there, `bridge.channels.web.follow`), the stream stays
open without deltas until that turn ends, then sends the `final` it stored
(503 when the database is away before the stream opens);
`POST /api/chat/new {"chat"}` -> stops what runs (here or elsewhere), sends
a real `/reset` through the core (the model forgets; the old conversation
stays readable) and returns `{"conversation": NEWID}`.

Each open stream holds a slot of `StreamSlots` (`web_streams`: at most so
many per token and per tenant, 429 past them; a reload that drops the token
closes the stream's connection). `Viewers` (`web_out`) counts the open
streams of each chat; when the last one goes and none comes back within the
grace period (`[web] detach_grace_s`), the turn is stopped (unless a page
follows it from another instance).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from aiohttp import web

from bridge.channels.web.follow import Follow, stored_final
from bridge.channels.web.gate import (
    STOPPING,
    ChatOnly,
    WebGate,
    answering_stopped,
    error,
    stopped,
)
from bridge.channels.web.input import ChatRequest
from bridge.channels.web.out import Out, Viewers
from bridge.channels.web.relay import StopRelay
from bridge.channels.web.streams import Slot, StreamSlots
from bridge.channels.web.upload import WebUploads, claim_for
from bridge.core.conversations import ConversationArchive
from bridge.core.diskfull import DISK_FULL
from bridge.core.running import RunningTurns
from bridge.core.sessions import SessionKey
from bridge.storage.errors import StorageError
from bridge.types.messages import Attachment, DeltaSink, Final, Inbound
from bridge.types.progress import ProgressSink


class ProgressHandle(Protocol):
    """The core's `handle` with its progress sink."""

    def __call__(
        self, inbound: Inbound, on_delta: DeltaSink | None, on_progress: ProgressSink | None
    ) -> Awaitable[Final]: ...


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
        streams: StreamSlots | None = None,
        relay: StopRelay | None = None,  # instances share the home: stops reach the others
        follow: Follow | None = None,  # and pages follow turns that run on another
    ) -> None:
        self._gate, self._handle, self._running = gate, handle, running
        self.relay, self.follow = relay, follow
        self._streams = streams if streams is not None else StreamSlots(8, 16)
        self._archive, self._final, self._headers = archive, final_json, headers
        self.viewers = Viewers(running, grace_s, self._watched if follow is not None else None)
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

    def too_many(self, tenant: str) -> web.Response:
        """429: the token (or its tenant) holds as many open streams as it may."""
        response = error(
            429,
            f"too many open event streams (at most {self._streams.per_token} per page token, "
            f"{self._streams.per_tenant} per person); close another tab or wait",
        )
        response.headers["Retry-After"] = "10"
        return response

    def release(self, slot: Slot) -> None:
        self._streams.release(slot)

    def slot(
        self,
        request: web.Request,
        token: str,
        tenant: str,
        waiting: asyncio.Task[Any] | None = None,
        counted: bool = True,
        own_turn: bool = False,
    ) -> Slot | None:
        """A stream slot whose revocation closes this request's connection (and cancels
        `waiting`: a request that waits for its answer without a stream); `counted`:
        against the caps, `own_turn`: it answers a turn of its own, so a shutdown leaves
        it to end answered (`StreamSlots.open`)."""

        def close() -> None:
            if waiting is not None:
                waiting.cancel()
            transport = request.transport
            if transport is not None:
                transport.close()

        return self._streams.open(token, tenant, close, counted, own_turn)

    async def stream(self, request: web.Request) -> web.StreamResponse:
        caller = self._gate.caller(request)
        if caller is None:
            return self._gate.deny()
        tenant, token = caller
        parsed = await self._gate.body(request, ChatRequest, '{"text": "hello"}')
        if isinstance(parsed, web.Response):
            return parsed
        slot = self.slot(request, token, tenant, own_turn=True)
        if slot is None:
            return self.too_many(tenant)
        try:
            files = self.attachments(tenant, parsed)
            if isinstance(files, web.Response):
                return files
            return await self._answer(request, tenant, parsed, files)
        finally:
            self._streams.release(slot)

    async def _answer(
        self, request: web.Request, tenant: str, parsed: ChatRequest, files: tuple[Attachment, ...]
    ) -> web.StreamResponse:
        out = Out(request, SessionKey(tenant, "web", parsed.chat), self.viewers)
        await out.open(self._headers)
        try:
            inbound = self.inbound(tenant, parsed, files)
            try:
                final = await self._handle(inbound, out.delta, out.progress)
            except asyncio.CancelledError:  # the daemon stops: the page hears why, then it ends
                answering_stopped()
                await out.send("final", {"text": STOPPING, "kind": "error"})
                return out.response
            await out.send("final", self._final(final, tenant))
        finally:
            await out.close()
        return out.response

    async def attach(self, request: web.Request) -> web.StreamResponse:
        key = self._gate.key(request)
        caller = self._gate.caller(request)
        if isinstance(key, web.Response) or caller is None:
            return key if isinstance(key, web.Response) else self._gate.deny()
        slot = self.slot(request, caller[1], key.tenant)
        if slot is None:
            return self.too_many(key.tenant)
        try:
            return await self._attached(request, key)
        finally:
            self._streams.release(slot)

    async def _attached(self, request: web.Request, key: SessionKey) -> web.StreamResponse:
        attached = self._running.attach(key)
        if attached is None:
            return await self._followed(request, key)
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

    async def _followed(self, request: web.Request, key: SessionKey) -> web.StreamResponse:
        """Nothing runs here: follow the turn another instance runs until it ends, then
        send the answer it stored (204: nothing runs anywhere)."""
        identity = self._gate.identity(key.tenant)  # the caller's own chat, as leased names it
        follow, archive = self.follow, self._archive
        try:
            if follow is None or archive is None or not await follow.elsewhere(identity, key.chat):
                return web.Response(status=204)
            await follow.mark(identity, key.chat)  # watched before the page hears anything
        except StorageError:
            return error(503, "the database is away: where the answer runs is not known")
        out = Out(request, key, self.viewers)
        await out.open(self._headers)
        try:
            if await follow.ended(identity, key.chat, lambda: out.gone):
                final = await stored_final(archive, key, self._clock())
                await out.send("final", self._final(final, key.tenant))
        except StorageError:
            pass  # the stream ends without its final: the page reads the history again
        finally:
            await out.close()
        return out.response

    async def elsewhere(self, key: SessionKey) -> bool:
        """The chat's turn runs on another instance (an attach here follows it)."""
        if self.follow is None:
            return False
        return await self.follow.elsewhere(self._gate.identity(key.tenant), key.chat)

    async def _watched(self, key: SessionKey) -> bool:
        """A page follows the chat's turn from another instance (`Viewers` asks)."""
        assert self.follow is not None
        return await self.follow.watched(self._gate.identity(key.tenant), key.chat)

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
        try:
            where = await self.stopping(key)
        except StorageError:
            return error(503, "the database is away: the stop did not reach the answer")
        return web.json_response({"stopped": where != "nowhere", "where": where})

    async def stopping(self, key: SessionKey) -> str:
        """Stop the chat's running turn: "here" (it ran here and has ended), "elsewhere"
        (the instance running it was asked to stop it) or "nowhere" (nothing runs)."""
        if await self._running.stop(key):
            return "here"
        identity = self._gate.identity(key.tenant)  # the caller's own chat, as leased names it
        if self.relay is not None and await self.relay.ask(identity, key.chat):
            return "elsewhere"
        return "nowhere"

    async def stop_here(self, identity: str, chat: str) -> bool:
        """Stop the turn of the web chat (identity, chat) running here (a relayed stop)."""
        return await self._running.stop(SessionKey(self._gate.tenant_of(identity), "web", chat))

    async def new(self, request: web.Request) -> web.Response:
        key = await self._key(request)
        if isinstance(key, web.Response):
            return key
        try:
            await self.stopping(key)  # elsewhere: the reset below waits for its lease
        except StorageError:
            return error(503, "the database is away: the chat was not reset")
        identity = self._gate.identity(key.tenant)
        reset = Inbound("web", identity, key.chat, "/reset", uuid.uuid4().hex)
        try:
            final = await self._handle(reset, None, None)
        except asyncio.CancelledError:  # the daemon stops (`Core.drain`)
            return stopped()
        if final.kind != "command":
            status = 507 if final.text == DISK_FULL else 500  # the core said why: say it too
            return error(status, final.text or "the chat was not reset")
        now = self._clock()
        ident = await self._archive.current(key, now) if self._archive is not None else None
        return web.json_response({"conversation": ident})


# the channel's WebTurns, for routes mounted by other modules whose answers are event
# streams too (`web_branch`): they hold its stream slots
TURNS = web.AppKey("roost_web_turns", WebTurns)
