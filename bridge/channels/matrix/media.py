"""Files in from Matrix: images, files, audio and voice messages, into the tenant's inbox.

Only a message whose sender resolves to a tenant is fetched at all
(`Receiving.tenant_of`). The size the sender declared (`info.size`) is
checked BEFORE anything is downloaded: over the limit (`[limits]
attachment_bytes`, or for audio `[llm.transcribe] max_bytes`) the file is
refused unfetched; the download itself (the authenticated media API of the
bot's own homeserver, `MatrixClient.download`) is cut off at the same limit
whatever was declared, so a lying sender gets nothing either. Audio is not
fetched at all without a transcription server. A refused or failed file
leaves the attachment without a path (its size set when known), and the
senses pipeline tells the person why. Files are written under a generated
name (never the sender's), mode 0600, through a hidden temporary name.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bridge.channels.common.spool import inbox_suffix, store_in_inbox
from bridge.channels.matrix.api import MatrixClient, MatrixError, TooLarge
from bridge.channels.matrix.events import Media
from bridge.types.messages import Attachment, AttachmentKind, Inbound

log = logging.getLogger("bridge.channels.matrix")


@dataclass(frozen=True, slots=True)
class Receiving:
    """Where a known person's files go and how large they may be."""

    tenant_of: Callable[[Inbound], str | None]  # None: a stranger, nothing is fetched
    inbox_of: Callable[[str], Path]  # a tenant's inbox
    file_bytes: Callable[[], int]  # [limits] attachment_bytes (a reload may change it)
    voice_bytes: int = 20 * 1024 * 1024  # [llm.transcribe] max_bytes
    transcribe: bool = True  # a transcription server is configured


def kind_of(msgtype: str, media: Media) -> AttachmentKind:
    if msgtype == "m.audio":
        return "voice" if media.voice else "audio"
    if msgtype == "m.image":
        return "photo"
    return "document"


class MediaFetcher:
    def __init__(self, client: MatrixClient) -> None:
        self._client = client
        self.refused = 0  # files refused for their size (a count for tests and logs)

    async def attachment(
        self, msgtype: str, media: Media, inbox: Path, receiving: Receiving
    ) -> Attachment:
        """The file as an Attachment in `inbox`; without a path when not fetched."""
        kind = kind_of(msgtype, media)
        voice = kind in ("voice", "audio")
        limit = receiving.voice_bytes if voice else receiving.file_bytes()
        mime = media.mime.split(";")[0].strip().lower() or "application/octet-stream"
        name = media.name[:200]
        if voice and not receiving.transcribe:
            return Attachment(kind, "", mime, name)  # the voice handler says nobody listens
        if media.size > limit:
            self.refused += 1
            log.info("matrix: a %s was refused unfetched: declared larger than the limit", kind)
            return Attachment(kind, "", mime, name, media.size)
        try:
            data = await self._client.download(media.mxc, limit)
        except TooLarge as exc:
            self.refused += 1
            log.warning("matrix: a %s was cut off: larger than the limit", kind)
            return Attachment(kind, "", mime, name, exc.size)
        except MatrixError as exc:
            log.warning("matrix: a %s could not be fetched: %s", kind, exc)
            return Attachment(kind, "", mime, name)
        try:
            path = await asyncio.to_thread(store_in_inbox, inbox, data, inbox_suffix(name, mime))
        except OSError as exc:
            log.error("matrix: a %s could not be stored: %s", kind, exc.strerror)
            return Attachment(kind, "", mime, name)
        return Attachment(kind, str(path), mime, name, len(data))
