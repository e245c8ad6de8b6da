"""Thumbnails of the images a person sent, for the history on the web page.

`GET /api/attachment?chat=C&seq=N&file=I[&conversation=ID]` (bearer token,
scoped to its tenant) -> the `I`th file of the person's message `seq` (of
the current conversation, or of the archived one `ID` of this chat) as a
small image (at most `SIDE` pixels a side, re-encoded in a confined decoder
process as the senses do for the model: no metadata passed on, the same
pixel, scan, memory and time limits), while the inbox still has
it (`[limits] attachment_keep_hours`); 404 otherwise, and for anything that
is not an image. The page fetches it with its token and draws it on a
canvas, so no image URL carries a credential. The file is named by the
message's stored `meta` (the inbox's generated name), opened without
following a symbolic link, and must be a regular file in the tenant's inbox.
The message is read through the `Database` protocol (`bridge.storage`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from bridge.channels.web.branch import REF
from bridge.channels.web.gate import WebGate, error
from bridge.core.sessions import SessionKey
from bridge.core.shown import read_meta
from bridge.storage.protocol import Database

SIDE = 320
GONE = "that image is no longer kept"


Thumbnail = Callable[[str, int], Awaitable[tuple[str, bytes] | None]]
"""(tenant, open file) -> (mime, bytes) of the image at most `SIDE` a side, or None."""


def open_inbox_file(inbox: Path, ref: str, limit: int) -> int | None:
    """An open descriptor of `inbox/ref`: a plain name, a regular file, no link, at most
    `limit` bytes; None otherwise. The caller closes it."""
    if not REF.fullmatch(ref):
        return None
    try:
        fd = os.open(inbox / ref, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        os.close(fd)
        return None
    return fd


class WebThumbs:
    def __init__(
        self,
        gate: WebGate,
        db: Database,
        inbox: Callable[[str], Path],
        limit: int,
        thumbnail: Thumbnail,
    ) -> None:
        self._gate, self._db, self._inbox, self._limit = gate, db, inbox, limit
        self._thumbnail = thumbnail

    def mount(self, app: web.Application) -> None:
        app.router.add_get("/api/attachment", self.thumbnail)

    async def _meta(self, key: SessionKey, seq: int, conversation: int | None) -> str | None:
        """The stored `meta` of the person's message `seq`: one SELECT (a reader)."""
        if conversation is None:
            found = await self._db.fetch_value(
                "SELECT meta FROM session_messages WHERE id = ? AND tenant = ? AND channel = ?"
                " AND chat = ? AND role = 'user'",
                (seq, key.tenant, key.channel, key.chat),
            )
        else:
            found = await self._db.fetch_value(
                "SELECT m.meta FROM conversation_messages m JOIN conversations c"
                " ON c.id = m.conversation WHERE m.id = ? AND m.conversation = ?"
                " AND m.role = 'user' AND c.tenant = ? AND c.channel = ? AND c.chat = ?",
                (seq, conversation, key.tenant, key.channel, key.chat),
            )
        return None if found is None else str(found)

    async def thumbnail(self, request: web.Request) -> web.StreamResponse:
        key = self._gate.key(request)
        if isinstance(key, web.Response):
            return key
        numbers = [self._gate.number(request, n) for n in ("seq", "file", "conversation")]
        for value in numbers:
            if isinstance(value, web.Response):
                return value
        seq, index, conversation = (v if isinstance(v, int) else None for v in numbers)
        if seq is None:
            return error(400, "seq: a message of the conversation (GET /api/history)")
        meta = await self._meta(key, seq, conversation)
        files = read_meta(meta).get("files", []) if meta else []
        if not 0 <= (index or 0) < len(files) or files[index or 0].get("kind") != "photo":
            return error(404, "no such image in this conversation")
        fd = open_inbox_file(self._inbox(key.tenant), str(files[index or 0]["ref"]), self._limit)
        if fd is None:
            return error(404, GONE)
        try:
            made = await self._thumbnail(key.tenant, fd)
        finally:
            os.close(fd)
        if made is None:  # not an image the decoder opens within its limits
            return error(404, GONE)
        return web.Response(body=made[1], content_type=made[0])
