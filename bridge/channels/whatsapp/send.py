"""Sending to one WhatsApp chat: an answer's text, its offers, files and voice.

`Outgoing.answer(to, markdown, actions)` lays the answer out (`lay_out`:
rendered and split by `render.chunks`) and sends the pieces in order; offers
go on the last piece as reply buttons or a list (`buttons.interactive`: the
piece becomes the body when it fits 1024 characters, else a short "Tap to
answer:" message follows) or, when they fit neither, as text lines (then
part of `Layout.text`, what the outbox keeps). `document` and `voice`
upload the bytes (`POST /{phone_number_id}/media`) and send the media id; a
file over WhatsApp's 100 MB is named instead. Every call goes through the
client's retries; a `GraphError` that survives them is the caller's. Each
piece is recorded the moment it arrives (`common.parts.Progress`, piece k is
part k), and a piece already recorded is skipped, so an answer that failed at
piece 2 resumes at piece 2 (the reply hands the record to the outbox, the
outbox keeps its own). A piece that went out unconfirmed (it may show) is
recorded `unknown`, never sent again, and the next pieces follow, so the
answer is neither cut short nor shown twice.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridge.channels.common.parts import Progress
from bridge.channels.common.retry import Backoff
from bridge.channels.whatsapp.buttons import TAP, as_text, interactive
from bridge.channels.whatsapp.client import GraphClient, GraphError
from bridge.channels.whatsapp.render import LIMIT, chunks
from bridge.schedule.outbox_parts import OutboxPart
from bridge.types.messages import Action, OutFile

log = logging.getLogger("bridge.channels.whatsapp")
MAX_DOCUMENT = 100 * 1024 * 1024  # what the Cloud API takes as a document
MAX_AUDIO = 16 * 1024 * 1024
VOICE_MIME = "audio/ogg"


@dataclass(frozen=True, slots=True)
class Layout:
    """An answer as it goes out: `pieces` in order (an empty one only carries `offer`)."""

    text: str  # the Markdown the pieces were cut from (what the outbox keeps of it)
    pieces: list[str]
    offer: dict[str, Any] | None = None  # buttons or a list, on the last piece


def lay_out(markdown: str, actions: Sequence[Action] = ()) -> Layout:
    """The pieces of an answer and its offers; the same text lays out the same pieces."""
    pieces = chunks(markdown, LIMIT)
    offer = interactive(actions, pieces[-1]) if actions and pieces else None
    if actions and offer is None:
        offer = interactive(actions, TAP)
        if offer is None:  # neither buttons nor a list: the offers as text
            markdown = f"{markdown}\n\n{as_text(actions)}"
            pieces = chunks(markdown, LIMIT)
        else:
            pieces.append("")  # the offers follow in a message of their own
    return Layout(markdown, pieces, offer)


class Outgoing:
    def __init__(self, client: GraphClient) -> None:
        self.client = client

    async def answer(
        self,
        to: str,
        markdown: str,
        actions: Sequence[Action] = (),
        backoff: Backoff | None = None,
    ) -> list[str]:
        """Send the answer (and its offers); the wamids, in order."""
        return await self.pieces(to, lay_out(markdown, actions), backoff)

    async def pieces(
        self,
        to: str,
        layout: Layout,
        backoff: Backoff | None = None,
        progress: Progress | None = None,
    ) -> list[str]:
        """Send the pieces `progress` does not know as settled, in order, recording each;
        the wamids sent now, in order."""
        progress = progress if progress is not None else Progress()
        sent: list[str] = []
        for k, piece in enumerate(layout.pieces):
            if progress.settled(k):
                continue
            if k == len(layout.pieces) - 1 and layout.offer is not None:
                message = {"to": to, "type": "interactive", "interactive": layout.offer}
            elif piece:
                message = text_message(to, piece)
            else:
                continue
            try:
                wamid = await self.client.send(message, backoff)
            except GraphError as exc:
                if not exc.unconfirmed:
                    raise
                log.warning("whatsapp: piece %d of an answer may have arrived: %s", k + 1, exc)
                await progress.mark(OutboxPart(k, "unknown"))
                continue
            await progress.mark(OutboxPart(k, "sent", wamid))
            sent.append(wamid)
        return sent

    async def text(self, to: str, body: str, backoff: Backoff | None = None) -> str:
        return await self.client.send(text_message(to, body), backoff)

    async def document(self, to: str, file: OutFile) -> str | None:
        """Upload and send one file; None (and a line saying so) when it is too large."""
        size = await asyncio.to_thread(_size, file.path)
        if size is None or size > MAX_DOCUMENT:
            mb = f"{(size or 0) / 1_000_000:.1f} MB"
            await self.text(to, f"📎 {file.name} ({mb}) is larger than WhatsApp takes (100 MB).")
            return None
        data = await asyncio.to_thread(_read, file.path)
        media_id = await self.client.upload(data, file.mime, file.name)
        document = {"id": media_id, "filename": file.name}
        return await self.client.send({"to": to, "type": "document", "document": document})

    async def voice(self, to: str, ogg: bytes) -> str | None:
        """Send an OGG/Opus answer as a voice message; None when it is too large."""
        if len(ogg) > MAX_AUDIO:
            return None
        media_id = await self.client.upload(ogg, VOICE_MIME, "answer.ogg")
        return await self.client.send({"to": to, "type": "audio", "audio": {"id": media_id}})


def text_message(to: str, body: str) -> dict[str, Any]:
    return {"to": to, "type": "text", "text": {"preview_url": False, "body": body}}


def _size(path: Path) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def _read(path: Path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()
