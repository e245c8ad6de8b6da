"""Edit a sent message, ask for another answer, switch between the versions.

Routes (bearer token, scoped to its tenant; `chat` as in `/api/chat`; `seq`
a message of the current conversation, as `/api/history` gives it):
`POST /api/chat/edit {"chat", "seq", "text"}` and `POST /api/chat/regenerate
{"chat", "seq"}` answer with the event stream of `/api/chat/stream`: the turn
of message `seq` and every later one are kept as a version
(`bridge.core.versions`), and the turn is asked again, with the new text or
the same one, with the same files when the inbox still has them (a
regenerated message whose files were swept is asked again with the text the
model was given the first time, and still shows what the person sent);
`POST /api/chat/version {"chat", "seq", "index"}` -> `{"switched": bool}` makes
version `index` (0-based, oldest first; `/api/history` gives each turn's
`versions: {"index", "count"}`) the one the conversation continues from.
When the new turn is not stored (the model failed, or it was cancelled at
shutdown), the version it replaced comes back. Like `/api/chat/stream`, an
edit or regenerate stream holds a slot of the channel's `StreamSlots` (429
past the caps per token and per tenant; a reload that drops its token closes
its connection), taken from the app (`web_turns.TURNS`) when it is mounted.
While an answer runs in the chat, each is a 409. A message of another chat
or tenant is a 404, as if it did not exist.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast, get_args

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from bridge.channels.web.gate import (
    CHAT_PATTERN,
    ROW_ID_MAX,
    STOPPING,
    WebGate,
    answering_stopped,
    error,
)
from bridge.channels.web.out import Out, Viewers
from bridge.channels.web.turns import TURNS, ProgressHandle, WebTurns
from bridge.core.running import RunningTurns
from bridge.core.sessions import SessionKey, SessionStore
from bridge.core.shown import read_meta
from bridge.core.versions import BranchPoint, TurnVersions, VersionError
from bridge.types.messages import Attachment, AttachmentKind, Final, Inbound

MAX_TEXT = 16_000
REF = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,80}$")
KINDS = frozenset(get_args(AttachmentKind))
RUNNING = "an answer is running in this chat; stop it first"


class RegenerateBody(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built at first request
    chat: str = Field("default", pattern=CHAT_PATTERN)
    seq: int = Field(ge=1, le=ROW_ID_MAX)


class EditBody(RegenerateBody):
    text: str = Field(max_length=MAX_TEXT)


class VersionBody(RegenerateBody):
    index: int = Field(ge=0, le=10_000)


def reattached(inbox: Path, files: list[dict[str, Any]]) -> tuple[tuple[Attachment, ...], int]:
    """The files of a sent message that the inbox still has, as attachments; and how many
    it no longer has. Only plain generated names, regular files (no symbolic link)."""
    found: list[Attachment] = []
    for f in files:
        ref, kind = str(f.get("ref", "")), str(f.get("kind", ""))
        if not REF.fullmatch(ref) or kind not in KINDS:
            continue
        path = inbox / ref
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            name, mime = str(f.get("name", "")), str(f.get("mime", ""))
            size = info.st_size
            found.append(Attachment(cast(AttachmentKind, kind), str(path), mime, name, size))
    return tuple(found), len(files) - len(found)


class WebBranches:
    def __init__(
        self,
        gate: WebGate,
        sessions: SessionStore,
        running: RunningTurns[SessionKey],
        handle: ProgressHandle,
        viewers: Viewers,
        final_json: Callable[[Final, str], dict[str, Any]],  # the reply, to this tenant
        headers: dict[str, str],
        inbox: Callable[[str], Path],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._gate, self._sessions, self._running = gate, sessions, running
        self._handle, self._viewers, self._final = handle, viewers, final_json
        self._headers, self._inbox, self._clock = headers, inbox, clock
        self._versions: TurnVersions = sessions.archive.shown.versions
        self._turns: WebTurns | None = None  # the channel's stream slots, found at mount

    def mount(self, app: web.Application) -> None:
        self._turns = app.get(TURNS)
        app.router.add_post("/api/chat/edit", self.edit)
        app.router.add_post("/api/chat/regenerate", self.regenerate)
        app.router.add_post("/api/chat/version", self.version)

    async def _parsed(
        self, request: web.Request, model: type[RegenerateBody], example: str
    ) -> tuple[SessionKey, RegenerateBody, str] | web.Response:
        """The chat, the body and the token's key (its stream slots are counted by it)."""
        caller = self._gate.caller(request)
        if caller is None:
            return self._gate.deny()
        tenant, token = caller
        body = await self._gate.body(request, model, example)
        if isinstance(body, web.Response):
            return body
        key = SessionKey(tenant, "web", body.chat)
        if self._running.running(key):
            return error(409, RUNNING)
        return key, body, token

    async def edit(self, request: web.Request) -> web.StreamResponse:
        got = await self._parsed(request, EditBody, '{"chat": "c", "seq": 12, "text": "..."}')
        if isinstance(got, web.Response):
            return got
        key, body, token = got
        assert isinstance(body, EditBody)
        if not body.text.strip():
            return error(400, "text: the edited message is empty")
        return await self._held(request, key, token, body.seq, body.text)

    async def regenerate(self, request: web.Request) -> web.StreamResponse:
        got = await self._parsed(request, RegenerateBody, '{"chat": "c", "seq": 12}')
        if isinstance(got, web.Response):
            return got
        key, body, token = got
        return await self._held(request, key, token, body.seq, None)

    async def version(self, request: web.Request) -> web.Response:
        got = await self._parsed(request, VersionBody, '{"chat": "c", "seq": 12, "index": 0}')
        if isinstance(got, web.Response):
            return got
        key, body, _ = got
        assert isinstance(body, VersionBody)
        conversation = await self._sessions.archive.current(key, self._clock())
        try:
            switched = await self._versions.switch(key, conversation, body.seq, body.index)
        except VersionError as exc:
            return error(404, str(exc))
        self._sessions.forget(key)
        return web.json_response({"switched": switched})

    async def _held(
        self, request: web.Request, key: SessionKey, token: str, seq: int, text: str | None
    ) -> web.StreamResponse:
        """`_again` while holding a stream slot (429 when the token or tenant has its fill)."""
        turns = self._turns
        if turns is None:  # mounted on an app without the channel's turns (a test's)
            return await self._again(request, key, seq, text)
        slot = turns.slot(request, token, key.tenant, own_turn=True)
        if slot is None:
            return turns.too_many(key.tenant)
        try:
            return await self._again(request, key, seq, text)
        finally:
            turns.release(slot)

    async def _again(
        self, request: web.Request, key: SessionKey, seq: int, text: str | None
    ) -> web.StreamResponse:
        """Keep the turn of `seq` and what followed as a version, then ask it again."""
        conversation = await self._sessions.archive.current(key, self._clock())
        try:
            point = await self._versions.branch(key, conversation, seq)
        except VersionError as exc:
            return error(404, str(exc))
        self._sessions.forget(key)
        inbound, keep_sent = self._asked(key, point, text)
        out = Out(request, key, self._viewers)
        await out.open(self._headers)
        try:
            try:
                final = await self._handle(inbound, out.delta, out.progress)
                if keep_sent:  # asked with the model's text: still show what the person sent
                    await self._versions.set_sent(key, inbound.msg_id, point.meta)
            finally:
                if await self._versions.undo_branch(key, conversation, point):  # nothing stored
                    self._sessions.forget(key)
        except asyncio.CancelledError:  # the daemon stops (`Core.drain`): the page hears why
            answering_stopped()
            final = Final(STOPPING, "error")
        try:
            await out.send("final", self._final(final, key.tenant))
        finally:
            await out.close()
        return out.response

    def _asked(self, key: SessionKey, point: BranchPoint, text: str | None) -> tuple[Inbound, bool]:
        """The message to ask again, and whether its stored `meta` must be the old one."""
        sent = read_meta(point.meta)
        files, missing = reattached(self._inbox(key.tenant), sent.get("files", []))
        identity, msg_id = self._gate.identity(key.tenant), uuid.uuid4().hex
        if text is None and missing:
            return Inbound("web", identity, key.chat, point.content, msg_id), True
        typed = text if text is not None else str(sent.get("text", point.content))
        quote = str(sent.get("quote", ""))
        inbound = Inbound("web", identity, key.chat, typed, msg_id, quoted=quote, attachments=files)
        return inbound, False
