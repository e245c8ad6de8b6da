"""The web page's list of conversations: rename, delete, search; and what the page
should know before the first message (is a model configured, can answers be spoken).

Routes (bearer token, scoped to its tenant; `chat` as in `/api/chat`):
`POST /api/conversations/rename {"chat", "conversation", "title"}` ->
`{"title"}` (the title as kept: one line, 1-120 characters);
`POST /api/conversations/delete {"chat", "conversation"}` -> `{"deleted": true,
"current"}` (deleting the current conversation stops its answer and resets
the chat through the core, as "new chat" does, then deletes what was
archived; `current` is the chat's current conversation afterwards);
`GET /api/conversations/search?chat=C&q=TEXT` -> `{"results": [{"conversation",
"title", "current", "updated_at", "hits", "seq"?, "role"?, "snippet"?,
"match"?}]}` (in what the page shows: `bridge.channels.web.search`, when the
history route is mounted; else `bridge.core.conversation_edits`, the session
and archive only); `GET /api/status?chat=C` ->
`{"model": {"name", "describe", "configured"}, "setup"?: {"toml", "env"},
"speech": {"configured", "on"}, "tenant"}` (`setup` only when no model is
configured: the page shows it before the first message; `tenant`: whose token
it is, so the page can say who is signed in and name the account a `#token=`
link switches to). An id of another chat or tenant is a 404, as if it did not
exist.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from bridge.channels.web.gate import CHAT_PATTERN, ROW_ID_MAX, WebGate, error, stopped
from bridge.channels.web.history import HISTORY
from bridge.channels.web.search import search as search_shown
from bridge.channels.web.turns import ProgressHandle
from bridge.core.conversation_edits import ConversationEdits, EditError
from bridge.core.conversations import ConversationArchive
from bridge.core.running import RunningTurns
from bridge.core.sessions import SessionKey
from bridge.types.messages import Inbound

Status = Callable[[SessionKey], dict[str, Any]]
NOT_FOUND = "no such conversation in this chat; GET /api/conversations lists them"


class DeleteBody(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built at first request
    chat: str = Field("default", pattern=CHAT_PATTERN)
    conversation: int = Field(ge=1, le=ROW_ID_MAX)


class RenameBody(DeleteBody):
    title: str = Field(max_length=1000)


class WebChats:
    def __init__(
        self,
        gate: WebGate,
        archive: ConversationArchive,
        edits: ConversationEdits,
        running: RunningTurns[SessionKey],
        handle: ProgressHandle,
        status: Status,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._gate, self._archive, self._edits = gate, archive, edits
        self._running, self._handle, self._status, self._clock = running, handle, status, clock
        # one search at a time per tenant: a search reads whole conversations on the
        # loop, so parallel ones of one tenant would hold it for every other tenant
        self._searching: dict[str, asyncio.Lock] = {}

    def mount(self, app: web.Application) -> None:
        app.router.add_post("/api/conversations/rename", self.rename)
        app.router.add_post("/api/conversations/delete", self.delete)
        app.router.add_get("/api/conversations/search", self.search)
        app.router.add_get("/api/status", self.status)

    async def _body(
        self, request: web.Request, model: type[DeleteBody], example: str
    ) -> tuple[SessionKey, DeleteBody] | web.Response:
        tenant = self._gate.tenant(request)
        if tenant is None:
            return self._gate.deny()
        parsed = await self._gate.body(request, model, example)
        if isinstance(parsed, web.Response):
            return parsed
        return SessionKey(tenant, "web", parsed.chat), parsed

    async def rename(self, request: web.Request) -> web.Response:
        got = await self._body(
            request, RenameBody, '{"chat": "default", "conversation": 12, "title": "Trip"}'
        )
        if isinstance(got, web.Response):
            return got
        key, body = got
        assert isinstance(body, RenameBody)
        try:
            title = await self._edits.rename(key, body.conversation, body.title)
        except EditError as exc:
            return error(400, f"title: {exc}")
        if title is None:
            return error(404, NOT_FOUND)
        return web.json_response({"title": title})

    async def delete(self, request: web.Request) -> web.Response:
        got = await self._body(request, DeleteBody, '{"chat": "default", "conversation": 12}')
        if isinstance(got, web.Response):
            return got
        key, body = got
        ident = body.conversation
        current = await self._archive.current(key, self._clock())
        if ident == current:
            await self._running.stop(key)
            identity = self._gate.identity(key.tenant)
            reset = Inbound("web", identity, key.chat, "/reset", uuid.uuid4().hex)
            try:
                final = await self._handle(reset, None, None)
            except asyncio.CancelledError:  # the daemon stops (`Core.drain`)
                return stopped()
            if final.kind != "command":
                return error(500, final.text or "the chat was not reset")
            current = await self._archive.current(key, self._clock())
            if current == ident:  # nothing was archived: only failed turns to forget
                await self._archive.shown.failures.forget(ident, key.tenant)
                return web.json_response({"deleted": True, "current": current})
        if not await self._edits.delete(key, ident):
            return error(404, NOT_FOUND)
        history = request.app.get(HISTORY)
        if history is not None:  # the page's kept commands of it
            await history.forget(key, ident)
        return web.json_response({"deleted": True, "current": current})

    async def search(self, request: web.Request) -> web.Response:
        key = self._gate.key(request)
        if isinstance(key, web.Response):
            return key
        query, history = request.query.get("q", ""), request.app.get(HISTORY)
        lock = self._searching.setdefault(key.tenant, asyncio.Lock())
        try:
            async with lock:
                if history is not None:  # what the pages show: commands, posts, failed turns
                    results = await search_shown(history, key, query, self._clock())
                else:
                    results = await self._edits.search(key, query, self._clock())
        except EditError as exc:
            return error(400, f"q: {exc}")
        return web.json_response({"results": results})

    async def status(self, request: web.Request) -> web.Response:
        key = self._gate.key(request)
        if isinstance(key, web.Response):
            return key
        return web.json_response({**self._status(key), "tenant": key.tenant})
