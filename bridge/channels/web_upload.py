"""Files the web page sends: `POST /api/upload`, and the ids a chat message names.

`POST /api/upload` (bearer token, scoped to its tenant; `multipart/form-data`
with one file part named `file`; `?voice=1` for a recording made on the
page) streams the file into the tenant's `TenantDirs.inbox` under a generated
name (`web-<32 hex>.<ext>`; the client's file name is kept for display
only, never used as a path) and answers `{"id", "kind", "name", "size",
"mime"}`. The body is counted while it streams: past `[limits]
attachment_bytes` the partial file is removed and the answer is 413 with a
JSON `error`. The type is sniffed from the bytes (`web_sniff`); the
client's `Content-Type` and suffix never make a file an image or a page.
Nothing is ever served back from here.

An upload waits for the chat message that names it (`"attachments": [id,
...]` in `POST /api/chat` and `/api/chat/stream`); `claim(tenant, ids)`
turns the ids into `Attachment`s, once, and only the tenant's own: an id of
another tenant is as unknown as a made-up one. An upload no message claims
within `ttl_s` is deleted. File names and bodies are never logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import time
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from aiohttp import BodyPartReader, web

from bridge.channels.web_gate import WebGate, error
from bridge.channels.web_sniff import SUPPORTED, Sniffed, Sniffer
from bridge.types.messages import Attachment

CHUNK = 64 * 1024
MULTIPART_SLACK = 16 * 1024  # boundaries and part headers around the file
MAX_PENDING = 32  # uploads of one tenant waiting for a message
MAX_PER_MESSAGE = 10
TTL_S = 3600.0
NAME_MAX = 120
UPLOAD_ID = re.compile(r"^[0-9a-f]{32}$")
ID_PATTERN = r"^[0-9a-f]{32}$"


class UploadError(ValueError):
    """An upload id a message may not use; the text says why."""


class TooLarge(Exception):
    """The body went past the limit while streaming."""


@dataclass(frozen=True, slots=True)
class Pending:
    attachment: Attachment
    expires: float


def display_name(raw: str | None, fallback: str) -> str:
    """The client's file name, safe to show: percent-escapes decoded (browsers escape
    `"` and line breaks, aiohttp more), its last path piece, no control characters,
    at most NAME_MAX characters; `fallback` when nothing is left."""
    base = re.split(r"[\\/]", unquote(raw or ""))[-1]
    cleaned = "".join(c for c in base if unicodedata.category(c)[0] != "C").strip()
    return cleaned[:NAME_MAX] or fallback


def _too_large(limit: int) -> web.Response:
    why = f"the limit is {limit:,} bytes: [limits] attachment_bytes"
    return error(413, f"the file is too large ({why})")


class Spool:
    """One upload on its way to disk: a private temporary file in the inbox, kept
    under its final name or removed. Plain blocking calls: the slow ones (the
    directory, fsync) are run in a thread by the caller."""

    def __init__(self, inbox: Path, ident: str) -> None:
        inbox.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path = inbox / f".web-{ident}.part"
        self._out = os.fdopen(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb")

    def write(self, chunk: bytes) -> None:
        self._out.write(chunk)

    def finish(self) -> None:
        self._out.flush()
        os.fsync(self._out.fileno())
        self._out.close()

    def keep(self, final: Path) -> None:
        os.replace(self.path, final)

    def discard(self) -> None:
        self._out.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)


class WebUploads:
    """The upload route and the per-tenant uploads waiting for a message."""

    def __init__(
        self,
        gate: WebGate,
        inbox: Callable[[str], Path],
        max_bytes: int,
        *,
        clock: Callable[[], float] = time.time,
        ttl_s: float = TTL_S,
    ) -> None:
        self._gate, self._inbox, self.max_bytes = gate, inbox, max_bytes
        self._clock, self._ttl = clock, ttl_s
        self._pending: dict[str, dict[str, Pending]] = {}

    def mount(self, app: web.Application) -> None:
        app.router.add_post("/api/upload", self.upload)

    def _sweep(self, tenant: str) -> dict[str, Pending]:
        """The tenant's waiting uploads, after deleting the expired ones."""
        waiting = self._pending.setdefault(tenant, {})
        now = self._clock()
        for ident in [i for i, p in waiting.items() if p.expires <= now]:
            with contextlib.suppress(OSError):
                os.unlink(waiting.pop(ident).attachment.path)
        return waiting

    async def upload(self, request: web.Request) -> web.Response:
        tenant = self._gate.tenant(request)
        if tenant is None:
            return self._gate.deny()
        length = request.content_length
        if length is not None and length > self.max_bytes + MULTIPART_SLACK:
            return _too_large(self.max_bytes)
        if len(self._sweep(tenant)) >= MAX_PENDING:
            return error(429, f"{MAX_PENDING} uploads are waiting for a message: send one first")
        part = await self._file_part(request)
        if isinstance(part, web.Response):
            return part
        voice = request.query.get("voice") == "1"
        stored = await self._store(part, self._inbox(tenant), voice)
        if isinstance(stored, web.Response):
            return stored
        ident, attachment = stored
        waiting = self._sweep(tenant)
        waiting[ident] = Pending(attachment, self._clock() + self._ttl)
        body = {"id": ident, "kind": attachment.kind, "name": attachment.name}
        return web.json_response(body | {"size": attachment.size, "mime": attachment.mime})

    @staticmethod
    async def _file_part(request: web.Request) -> BodyPartReader | web.Response:
        how = 'send multipart/form-data with one file part named "file"'
        try:
            reader = await request.multipart()
            part = await reader.next()
        except (ValueError, AssertionError, KeyError):
            return error(400, how)
        if not isinstance(part, BodyPartReader) or part.name != "file" or part.filename is None:
            return error(400, how)
        return part

    async def _store(
        self, part: BodyPartReader, inbox: Path, voice: bool
    ) -> tuple[str, Attachment] | web.Response:
        """Stream the part to a temporary file, then keep it under its generated name."""
        ident = secrets.token_hex(16)
        spool = await asyncio.to_thread(Spool, inbox, ident)
        sniffer = Sniffer()
        try:
            while chunk := await part.read_chunk(CHUNK):
                if sniffer.size + len(chunk) > self.max_bytes:
                    raise TooLarge()
                sniffer.feed(chunk)
                spool.write(chunk)
            await asyncio.to_thread(spool.finish)
        except TooLarge:
            spool.discard()
            return _too_large(self.max_bytes)
        except BaseException:
            spool.discard()
            raise
        name = display_name(part.filename, "file")
        found = sniffer.result(name)
        if found is None:
            spool.discard()
            return error(415, f"roost cannot read this kind of file; it reads {SUPPORTED}")
        final = inbox / f"web-{ident}.{found.ext}"
        await asyncio.to_thread(spool.keep, final)
        return ident, self._attachment(found, final, name, sniffer.size, voice)

    @staticmethod
    def _attachment(found: Sniffed, path: Path, name: str, size: int, voice: bool) -> Attachment:
        kind = "voice" if voice and found.kind == "audio" else found.kind
        return Attachment(kind, str(path), found.mime, name, size)

    def claim(self, tenant: str, ids: Iterable[str]) -> tuple[Attachment, ...]:
        """The tenant's uploads of these ids, each taken once; UploadError names an unknown one."""
        wanted = list(dict.fromkeys(ids))
        if len(wanted) > MAX_PER_MESSAGE:
            raise UploadError(f"attachments: at most {MAX_PER_MESSAGE} files per message")
        waiting = self._sweep(tenant)
        for ident in wanted:
            if ident not in waiting:
                raise UploadError(
                    f"attachments: no upload {ident!r} waits for this message (an upload is "
                    "used once, by the token that sent it, within an hour: upload it again)"
                )
        return tuple(waiting.pop(ident).attachment for ident in wanted)


def claim_for(
    uploads: WebUploads | None, tenant: str, ids: list[str]
) -> tuple[Attachment, ...] | web.Response:
    """A chat body's `attachments` as `Attachment`s, or the 400 that says why not."""
    if not ids:
        return ()
    if uploads is None:
        return error(400, "attachments: this roost takes no uploads on the web")
    try:
        return uploads.claim(tenant, ids)
    except UploadError as exc:
        return error(400, str(exc))
