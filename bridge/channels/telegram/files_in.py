"""Files in from Telegram: photos and documents, fetched into the tenant's inbox.

`FilesIn.receive(bot, msg, inbound)` turns a message's photo (the largest
size under the cap) or document into `Attachment`s. Only a message whose
sender resolves to a tenant (`dirs_of`) is fetched at all. The size the
message declares is checked against the smaller of Telegram's 20 MB bot
download limit and `[limits] attachment_bytes` BEFORE `getFile`; the
download itself is streamed from the Bot API server's `/file/bot<token>/`
URL (python-telegram-bot's `get_file` gives it) and stopped as soon as it
passes the cap. The file is written under a generated name (16 hex digits
and an extension from the sender's name or the MIME type, never the
sender's name itself), mode 0600, through a hidden temp name, so a tool
never sees half a file. A file that is too large or could not be fetched
still becomes an `Attachment` with an empty `path` (and the size as
declared), so the senses pipeline tells the person why. With a `quota`
(`[quota] tenant_bytes`) the file must also fit in what the tenant may
still store: checked against the declared size before `getFile` and
counted while it streams (stopped, and the partial file removed, when it
does not fit); the pipeline then says the storage is full. The URL holds the
bot token: it is never logged (errors log their type only).
"""

from __future__ import annotations

import asyncio
import logging
import mimetypes
import os
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

import aiohttp
from telegram import Bot, Message
from telegram.constants import FileSizeLimit
from telegram.error import TelegramError

from bridge.core.quota import QuotaExceeded, TenantQuota
from bridge.types.messages import Attachment, AttachmentKind, Inbound
from bridge.types.tenant_dirs import TenantDirs

log = logging.getLogger(__name__)
DOWNLOAD_LIMIT = int(FileSizeLimit.FILESIZE_DOWNLOAD)  # 20 MB: what a bot may fetch
IMAGE_MIMES = {
    "image/jpeg": ".jpg",
    "image/png": ".png",
    "image/webp": ".webp",
    "image/gif": ".gif",
}
_SUFFIX = re.compile(r"^\.[a-z0-9]{1,8}$")
CHUNK = 64 * 1024


@dataclass(frozen=True, slots=True)
class Offer:
    """A file a message carries, as Telegram described it (nothing fetched yet)."""

    kind: AttachmentKind
    file_id: str
    name: str
    mime: str
    size: int  # as declared; 0 when Telegram did not say
    width: int = 0
    height: int = 0


def offers(msg: Message, cap: int) -> list[Offer]:
    """The photo (largest size under `cap`) or document of a message; [] for neither."""
    if msg.photo:
        fitting = [p for p in msg.photo if (p.file_size or 0) <= cap] or [msg.photo[0]]
        best = max(fitting, key=lambda p: (p.width * p.height, p.file_size or 0))
        size, w, h = best.file_size or 0, best.width, best.height
        return [Offer("photo", best.file_id, "photo.jpg", "image/jpeg", size, w, h)]
    doc = msg.document
    if doc is None:
        return []
    mime = (doc.mime_type or "application/octet-stream").lower()
    kind: AttachmentKind = "photo" if mime in IMAGE_MIMES else "document"
    return [Offer(kind, doc.file_id, doc.file_name or "", mime, doc.file_size or 0)]


def stored_name(offer: Offer) -> str:
    """A fresh name for the inbox: random, with a suffix that is safe (or none)."""
    suffix = PurePosixPath(offer.name.lower()).suffix
    if not _SUFFIX.fullmatch(suffix):
        suffix = IMAGE_MIMES.get(offer.mime) or mimetypes.guess_extension(offer.mime) or ""
    return secrets.token_hex(8) + suffix


class TooLarge(Exception):
    """The download passed the cap."""


@dataclass(frozen=True, slots=True)
class FilesIn:
    """Where a sender's files go and how large they may be (wired by the app)."""

    dirs_of: Callable[[Inbound], TenantDirs | None]  # the sender's tenant; None: unknown
    max_bytes: Callable[[], int]  # `[limits] attachment_bytes`, as reloaded
    file_base_url: str  # the Bot API's file URL prefix, e.g. https://api.telegram.org/file/bot
    timeout_s: float = 120.0
    quota: TenantQuota | None = None  # [quota] tenant_bytes: files must fit

    async def receive(self, bot: Bot, msg: Message, inbound: Inbound) -> Inbound:
        """`inbound` with the message's files as attachments (unchanged when it has none)."""
        cap = min(DOWNLOAD_LIMIT, self.max_bytes())
        found = offers(msg, cap)
        dirs = self.dirs_of(inbound) if found else None
        if dirs is None:
            return inbound
        dirs.inbox.mkdir(mode=0o700, parents=True, exist_ok=True)
        got = [await self._fetch(bot, offer, dirs, cap) for offer in found]
        return replace(inbound, attachments=tuple(got), has_text=True)

    async def _fetch(self, bot: Bot, offer: Offer, dirs: TenantDirs, cap: int) -> Attachment:
        o = offer
        unfetched = Attachment(o.kind, "", o.mime, o.name, o.size, 0.0, o.width, o.height)
        if offer.size > cap:
            return unfetched
        room = Room(self.quota, dirs)
        path = dirs.inbox / stored_name(offer)
        try:
            await asyncio.to_thread(room.check, offer.size)  # walks at most once per ttl
            tg_file = await bot.get_file(offer.file_id)
            url = tg_file.file_path or ""
            if not url.startswith(self.file_base_url):  # a local path: never read from here
                raise ValueError("not a download URL of the Bot API server")
            size = await asyncio.wait_for(download(url, path, cap, room), self.timeout_s)
        except TooLarge:
            return replace(unfetched, size=max(offer.size, cap + 1))
        except QuotaExceeded as exc:  # the pipeline finds the storage full and says so
            return replace(unfetched, size=max(offer.size, exc.needed))
        except (TelegramError, aiohttp.ClientError, TimeoutError, ValueError, OSError) as exc:
            if "too big" in str(exc).lower():  # getFile: "Bad Request: file is too big"
                return replace(unfetched, size=max(offer.size, cap + 1))
            log.warning("telegram: a %s could not be fetched (%s)", offer.kind, type(exc).__name__)
            return unfetched
        return replace(unfetched, path=str(path), size=size)


@dataclass(frozen=True, slots=True)
class Room:
    """What a download may still store for its tenant (everything without a quota)."""

    quota: TenantQuota | None
    dirs: TenantDirs

    def check(self, n: int) -> None:
        if self.quota is not None:
            self.quota.check(self.dirs, n)

    def take(self, n: int, got: int) -> None:
        """Count the next `n` bytes of a file of which `got` are counted already."""
        if self.quota is None:
            return
        try:
            self.quota.take(self.dirs, n)
        except QuotaExceeded as exc:  # the figures of the whole file, not of one chunk
            raise QuotaExceeded(exc.used - got, exc.limit, got + n) from None

    def give_back(self, n: int) -> None:
        if self.quota is not None and n:
            self.quota.charge(self.dirs, -n)


async def download(url: str, path: Path, cap: int, room: Room | None = None) -> int:
    """Stream `url` into `path` (through a hidden temp file); `TooLarge` past `cap` bytes,
    `QuotaExceeded` when `room` has no space for the next chunk (nothing kept)."""
    temp = path.with_name(f".{path.name}.part")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    got = 0
    try:
        with os.fdopen(fd, "wb") as out:
            async with aiohttp.ClientSession() as session, session.get(url) as resp:
                if resp.status != 200:
                    raise aiohttp.ClientError(f"HTTP {resp.status}")
                if (resp.content_length or 0) > cap:
                    raise TooLarge
                async for chunk in resp.content.iter_chunked(CHUNK):
                    if got + len(chunk) > cap:
                        raise TooLarge
                    if room is not None:
                        room.take(len(chunk), got)
                    got += len(chunk)
                    out.write(chunk)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        if room is not None:
            room.give_back(got)
        raise
    return got


def file_base_url(api_base_url: str) -> str:
    """The Bot API's file URL prefix for its method URL prefix: .../bot -> .../file/bot."""
    return api_base_url.removesuffix("/bot") + "/file/bot"
