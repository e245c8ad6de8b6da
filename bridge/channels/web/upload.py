"""Files the web page sends: `POST /api/upload`, and the ids a chat message names.

`POST /api/upload` (bearer token, scoped to its tenant; `multipart/form-data`
with one file part named `file`, and nothing after it: a second part is a 400
and neither is kept; `?voice=1` for a recording made on the page) streams
the file into the tenant's `TenantDirs.inbox` under a generated name
(`web-<32 hex>.<ext>`; the client's file name is kept for display only,
never used as a path) and answers `{"id", "kind", "name", "size",
"mime"}`. The body is counted while it streams: past `[limits]
attachment_bytes` the partial file is removed and the answer is 413 with a
JSON `error`. The type is sniffed from the bytes (`web_sniff`); the
client's `Content-Type` and suffix never make a file an image or a page.
Nothing is ever served back from here.

With a `quota` (`bridge.core.quota`, `[quota] tenant_bytes`) the upload
must also fit in what the tenant may still store: a declared length that
does not fit is refused before a byte is read, and a body that passes it
while streaming is stopped there; both answer 507 with the figures, and
the partial file is removed. A full disk (ENOSPC, EDQUOT:
`bridge.core.diskfull`) is a 507 as well, never a 500. Multipart part
headers that aiohttp refuses (too long, too many, a NUL or another byte a
header may not hold) are a 400 saying so; the raw header is never logged.

At most `MAX_PENDING` uploads of a tenant wait for a message, counting those
still arriving (their place is held before the body is read and given back
when it fails), so concurrent uploads cannot pass the limit together.

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
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from aiohttp import BodyPartReader, MultipartReader, web
from aiohttp.http_exceptions import HttpProcessingError

from bridge.channels.common.sniff import SUPPORTED, Sniffed, Sniffer
from bridge.channels.common.spool import Spool, display_name
from bridge.channels.web.gate import WebGate, error
from bridge.core.diskfull import disk_full
from bridge.core.quota import QuotaExceeded, TenantQuota
from bridge.types.messages import Attachment
from bridge.types.tenant_dirs import TenantDirs

CHUNK = 64 * 1024
MULTIPART_SLACK = 16 * 1024  # boundaries and part headers around the file
MAX_PENDING = 32  # uploads of one tenant waiting for a message
MAX_PER_MESSAGE = 10
TTL_S = 3600.0
UPLOAD_ID = re.compile(r"^[0-9a-f]{32}$")
ID_PATTERN = r"^[0-9a-f]{32}$"


class UploadError(ValueError):
    """An upload id a message may not use; the text says why."""


class TooLarge(Exception):
    """The body went past the limit while streaming."""


class Unsupported(Exception):
    """The body is no kind of file roost reads."""


BAD_PARTS = (
    "the upload's part headers cannot be read (too long, too many, or a character a "
    "header may not hold, such as NUL in the file name): send multipart/form-data with "
    'one file part named "file"'
)
DISK_FULL = "the disk is full, so the file was not saved; try again once space is freed"


@dataclass(frozen=True, slots=True)
class Pending:
    attachment: Attachment
    expires: float


def _too_large(limit: int) -> web.Response:
    why = f"the limit is {limit:,} bytes: [limits] attachment_bytes"
    return error(413, f"the file is too large ({why})")


def _over_quota(exc: QuotaExceeded) -> web.Response:
    return error(507, f"the file was not saved: {exc}")


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
        quota: TenantQuota | None = None,
    ) -> None:
        self._gate, self._inbox, self.max_bytes = gate, inbox, max_bytes
        self._clock, self._ttl = clock, ttl_s
        self._quota = quota
        self._pending: dict[str, dict[str, Pending]] = {}
        self._arriving: Counter[str] = Counter()  # uploads of each tenant being received

    def mount(self, app: web.Application) -> None:
        app.router.add_post("/api/upload", self.upload)

    def _sweep(self, tenant: str) -> dict[str, Pending]:
        """The tenant's waiting uploads, after deleting the expired ones."""
        waiting = self._pending.setdefault(tenant, {})
        now = self._clock()
        for ident in [i for i, p in waiting.items() if p.expires <= now]:
            self._forget(tenant, waiting.pop(ident).attachment)
        return waiting

    def _forget(self, tenant: str, attachment: Attachment) -> None:
        """Remove a stored upload and give its bytes back to the tenant's quota."""
        with contextlib.suppress(OSError):
            os.unlink(attachment.path)
            if self._quota is not None:
                self._quota.charge(self._quota.dirs(tenant), -attachment.size)

    async def upload(self, request: web.Request) -> web.Response:
        tenant = self._gate.tenant(request)
        if tenant is None:
            return self._gate.deny()
        length = request.content_length
        if length is not None and length > self.max_bytes + MULTIPART_SLACK:
            return _too_large(self.max_bytes)
        if len(self._sweep(tenant)) + self._arriving[tenant] >= MAX_PENDING:
            return error(429, f"{MAX_PENDING} uploads are waiting for a message: send one first")
        self._arriving[tenant] += 1  # its place is held while the body arrives
        try:
            return await self._receive(request, tenant, length)
        finally:
            self._arriving[tenant] -= 1
            if self._arriving[tenant] <= 0:
                del self._arriving[tenant]

    async def _receive(self, request: web.Request, tenant: str, length: int | None) -> web.Response:
        dirs = self._quota.dirs(tenant) if self._quota is not None else None
        if self._quota is not None and dirs is not None and length is not None:
            try:  # the declared length must fit before a byte is read (walks at most per ttl)
                await asyncio.to_thread(self._quota.check, dirs, length - MULTIPART_SLACK)
            except QuotaExceeded as exc:
                return _over_quota(exc)
        parts = await self._file_part(request)
        if isinstance(parts, web.Response):
            return parts
        reader, part = parts
        voice = request.query.get("voice") == "1"
        stored = await self._store(part, self._inbox(tenant), voice, dirs)
        if isinstance(stored, web.Response):
            return stored
        ident, attachment = stored
        if not await self._alone(reader):  # a second part would be dropped unseen: refuse both
            self._forget(tenant, attachment)
            return error(400, "one file per upload: send each in a request of its own")
        waiting = self._sweep(tenant)
        waiting[ident] = Pending(attachment, self._clock() + self._ttl)
        body = {"id": ident, "kind": attachment.kind, "name": attachment.name}
        return web.json_response(body | {"size": attachment.size, "mime": attachment.mime})

    @staticmethod
    async def _file_part(
        request: web.Request,
    ) -> tuple[MultipartReader, BodyPartReader] | web.Response:
        how = 'send multipart/form-data with one file part named "file"'
        try:
            reader = await request.multipart()
            part = await reader.next()
        except (ValueError, AssertionError, KeyError):
            return error(400, how)
        except HttpProcessingError:  # aiohttp refused a part header: never logged
            return error(400, BAD_PARTS)
        if not isinstance(part, BodyPartReader) or part.name != "file" or part.filename is None:
            return error(400, how)
        return reader, part

    @staticmethod
    async def _alone(reader: MultipartReader) -> bool:
        """No part follows the file (the body ends after it)."""
        try:
            return await reader.next() is None
        except (ValueError, AssertionError, KeyError, HttpProcessingError):
            return False

    async def _store(
        self, part: BodyPartReader, inbox: Path, voice: bool, dirs: TenantDirs | None
    ) -> tuple[str, Attachment] | web.Response:
        """Stream the part to a temporary file, then keep it under its generated name."""
        ident = secrets.token_hex(16)
        try:
            spool = await asyncio.to_thread(Spool, inbox, ident)
        except OSError as exc:
            if disk_full(exc):
                return error(507, DISK_FULL)
            raise
        sniffer = Sniffer()
        taken = 0
        try:
            while chunk := await part.read_chunk(CHUNK):
                if sniffer.size + len(chunk) > self.max_bytes:
                    raise TooLarge()
                if self._quota is not None and dirs is not None:
                    self._quota.take(dirs, len(chunk))
                    taken += len(chunk)
                sniffer.feed(chunk)
                spool.write(chunk)
            await asyncio.to_thread(spool.finish)
            name = display_name(part.filename, "file")
            found = sniffer.result(name)
            if found is None:
                raise Unsupported()
            final = inbox / f"web-{ident}.{found.ext}"
            await asyncio.to_thread(spool.keep, final)
        except BaseException as exc:
            spool.discard()
            if taken and self._quota is not None and dirs is not None:
                self._quota.charge(dirs, -taken)
            return self._failed(exc)
        return ident, self._attachment(found, final, name, sniffer.size, voice)

    def _failed(self, exc: BaseException) -> web.Response:
        """The answer for an upload that was not kept (its partial file is gone)."""
        if isinstance(exc, TooLarge):
            return _too_large(self.max_bytes)
        if isinstance(exc, QuotaExceeded):
            return _over_quota(exc)
        if isinstance(exc, Unsupported):
            return error(415, f"roost cannot read this kind of file; it reads {SUPPORTED}")
        if isinstance(exc, HttpProcessingError | ValueError):
            return error(400, BAD_PARTS)
        if isinstance(exc, OSError) and disk_full(exc):
            return error(507, DISK_FULL)
        raise exc

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
