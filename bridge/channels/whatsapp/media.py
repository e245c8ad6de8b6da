"""Files in from WhatsApp: images, documents, voice notes, fetched into the tenant's inbox.

Only a message whose sender resolves to a tenant is fetched at all
(`Receiving.tenant_of`). `GET /{media-id}` names the file's URL and size
first; a size over the limit (`[limits] attachment_bytes`, or for audio
`[llm.transcribe] max_bytes`) is refused BEFORE anything is downloaded, and
audio is not fetched at all without a transcription server. The URL must be
the API's own scheme, host and port (a loopback test server's http too),
or https on one of `[whatsapp] media_hosts` (Meta's is lookaside.fbsbx.com)
on port 443 or the port its entry names: the access token goes nowhere
else, not even to another port of an allowed host. Redirects are followed by hand, at most
three, each to an allowed host; one off them, a declared or streamed size
over the limit, or any HTTP failure leaves the attachment without a file
(its `path` empty), and the senses pipeline tells the person why. Files are
written under a generated name (never the sender's), mode 0600, through a
hidden temporary name.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import aiohttp

from bridge.channels.common.spool import inbox_suffix, store_in_inbox
from bridge.channels.whatsapp.client import GraphClient, GraphError
from bridge.channels.whatsapp.payload import Media
from bridge.types.messages import Attachment, AttachmentKind, Inbound

log = logging.getLogger("bridge.channels.whatsapp")
CHUNK = 64 * 1024
MAX_HOPS = 3
REDIRECTS = frozenset({301, 302, 303, 307, 308})
IMAGE_MIMES = frozenset({"image/jpeg", "image/png", "image/webp", "image/gif"})


class MediaRefused(Exception):
    """A media URL or file roost will not fetch: `why` is a short reason for the log."""

    def __init__(self, why: str, size: int = 0) -> None:
        super().__init__(why)
        self.why, self.size = why, size


@dataclass(frozen=True, slots=True)
class Receiving:
    """Where a known person's files go and how large they may be."""

    tenant_of: Callable[[Inbound], str | None]  # None: a stranger, nothing is fetched
    inbox_of: Callable[[str], Path]  # a tenant's inbox
    file_bytes: Callable[[], int]  # [limits] attachment_bytes (a reload may change it)
    voice_bytes: int = 20 * 1024 * 1024  # [llm.transcribe] max_bytes
    transcribe: bool = True  # a transcription server is configured


def kind_of(meta_type: str, media: Media) -> AttachmentKind:
    if meta_type == "audio":
        return "voice" if media.voice else "audio"
    if meta_type == "image" or media.mime.lower() in IMAGE_MIMES:
        return "photo"
    return "document"


class MediaFetcher:
    def __init__(self, client: GraphClient, media_hosts: Sequence[str]) -> None:
        self._client = client
        api = urlsplit(client.base_url)
        # (scheme, host, port) a media URL may have: the API's own, or https on a media
        # host (its port when the entry names one, else 443); never any other port
        self._origins = {_origin(api.scheme, api.hostname or "", api.port)}
        for entry in media_hosts:  # "host" or "host:port"
            given = urlsplit(f"//{entry}")
            try:
                self._origins.add(_origin("https", given.hostname or "", given.port))
            except ValueError:  # a port out of range: that entry allows nothing
                continue
        self.refused = 0  # media URLs or files refused (a count for tests and logs)

    def allowed(self, url: str) -> bool:
        """The API's scheme, host and port, or https on a configured media host and port."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:  # a port that is not a number or out of range
            return False
        if parts.username or parts.password:
            return False
        return _origin(parts.scheme, parts.hostname or "", port) in self._origins

    async def attachment(
        self, meta_type: str, media: Media, inbox: Path, receiving: Receiving
    ) -> Attachment:
        """The file as an Attachment in `inbox`; without a path when not fetched."""
        kind = kind_of(meta_type, media)
        voice = kind in ("voice", "audio")
        limit = receiving.voice_bytes if voice else receiving.file_bytes()
        mime = media.mime.split(";")[0].strip().lower() or "application/octet-stream"
        att = Attachment(kind, "", mime, media.filename)
        if voice and not receiving.transcribe:
            return att  # the voice handler says there is nobody to listen
        try:
            info = await self._client.media(media.id)
            if info.size > limit:
                return Attachment(kind, "", mime, media.filename, info.size)
            data = await self.download(info.url, limit)
        except MediaRefused as exc:
            self.refused += 1
            log.warning("whatsapp: a %s was not fetched: %s", kind, exc.why)
            return Attachment(kind, "", mime, media.filename, exc.size)
        except GraphError as exc:
            log.warning("whatsapp: a %s could not be fetched: %s", kind, exc)
            return att
        try:
            path = await asyncio.to_thread(
                store_in_inbox, inbox, data, inbox_suffix(media.filename, mime)
            )
        except OSError as exc:
            log.error("whatsapp: a %s could not be stored: %s", kind, exc.strerror)
            return att
        return Attachment(kind, str(path), mime, media.filename, len(data))

    async def download(self, url: str, limit: int) -> bytes:
        """The file at `url`, at most `limit` bytes, from allowed hosts only."""
        for _ in range(MAX_HOPS + 1):
            if not self.allowed(url):
                raise MediaRefused("the media URL is not on an allowed host")
            try:
                async with self._client.session.get(
                    url, headers=self._client.auth, allow_redirects=False
                ) as response:
                    if response.status in REDIRECTS:
                        url = urljoin(url, response.headers.get("Location", ""))
                        continue
                    if response.status != 200:
                        raise GraphError(response.status, kind="media download")
                    declared = response.content_length
                    if declared is not None and declared > limit:
                        raise MediaRefused("larger than the limit", declared)
                    return await _capped(response, limit)
            except (TimeoutError, aiohttp.ClientError) as exc:
                raise GraphError(0, kind=type(exc).__name__) from None
        raise MediaRefused("too many redirects")


def _origin(scheme: str, host: str, port: int | None) -> tuple[str, str, int]:
    scheme = scheme.lower()
    default = {"https": 443, "http": 80}.get(scheme, 0)
    return scheme, host.lower().rstrip("."), port if port is not None else default


async def _capped(response: aiohttp.ClientResponse, limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(CHUNK):
        size += len(chunk)
        if size > limit:
            raise MediaRefused("larger than the limit", size)
        parts.append(chunk)
    return b"".join(parts)
