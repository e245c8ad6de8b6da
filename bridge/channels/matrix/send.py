"""Sending into one Matrix room: an answer (streamed by edits), notices, files and voice.

`Outgoing.answer(room, markdown)` sends the answer's pieces (`render.contents`)
in order; `Outgoing.stream` is one growing answer: its first piece is sent
once there is text, then edited in place (`m.replace`, `render.edit`), at most
once per `every_s` (the clock is injected), and `finish` writes the final text:
the first piece as the last edit, the rest as new messages. Files are uploaded
to the media repository and sent as `m.file`; a spoken answer as `m.audio`
marked as a voice message. Transaction ids are random, and a retried PUT keeps
its id: the homeserver sends a retried event once. An answer's own messages
(its first message, the streamed draft, and each later piece) have ids made
from the event they answer (`answer_txn`, `Stream(txn_base=...)`): a process
that sends the answer to the same message again (after a kill between the
answer going out and its done mark) gets the homeserver's event back, not a
second message (the homeserver keeps a device's transaction ids for a day).
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bridge.channels.matrix.api import MatrixClient, MatrixError
from bridge.channels.matrix.render import contents, edit, plain
from bridge.types.messages import Action, OutFile

VOICE_MIME = "audio/ogg"


def txn() -> str:
    return "roost" + secrets.token_hex(12)


def answer_txn(event_id: str) -> str:
    """The transaction ids' base of the answer to the message `event_id`, the same in
    every process (a hash: an event id is no path segment)."""
    return "roostanswer" + hashlib.sha256(event_id.encode()).hexdigest()[:32]


def with_offers(markdown: str, actions: Sequence[Action]) -> str:
    """Matrix has no buttons: the offers as lines (what to send to take one)."""
    if not actions:
        return markdown
    lines = "\n".join(f"- `{a.command}` — {a.label}" for a in actions)
    return f"{markdown}\n\n{lines}"


class Outgoing:
    def __init__(self, client: MatrixClient) -> None:
        self.client = client

    async def answer(self, room_id: str, markdown: str) -> list[str]:
        return [await self.client.send(room_id, c, txn()) for c in contents(markdown)]

    async def notice(self, room_id: str, text: str) -> str:
        return await self.client.send(room_id, plain(text), txn())

    async def file(self, room_id: str, file: OutFile) -> str | None:
        """Upload and send one file; None (and a line saying so) when refused as too large."""
        data = await asyncio.to_thread(_read, file.path)
        if data is None:
            return None
        try:
            uri = await self.client.upload(data, file.mime, file.name)
        except MatrixError as exc:
            if exc.status != 413:
                raise
            mb = f"{len(data) / 1_000_000:.1f} MB"
            await self.notice(room_id, f"📎 {file.name} ({mb}) is larger than the server takes.")
            return None
        content = {
            "msgtype": "m.file",
            "body": file.name,
            "filename": file.name,
            "url": uri,
            "info": {"mimetype": file.mime, "size": len(data)},
        }
        return await self.client.send(room_id, content, txn())

    async def voice(self, room_id: str, ogg: bytes) -> str:
        uri = await self.client.upload(ogg, VOICE_MIME, "answer.ogg")
        content = {
            "msgtype": "m.audio",
            "body": "Voice message",
            "url": uri,
            "info": {"mimetype": VOICE_MIME, "size": len(ogg)},
            "org.matrix.msc1767.audio": {},
            "org.matrix.msc3245.voice": {},
        }
        return await self.client.send(room_id, content, txn())


class Stream:
    """One answer growing in one message, edited in place, paced."""

    def __init__(
        self,
        client: MatrixClient,
        room_id: str,
        every_s: float,
        clock: Callable[[], float],
        *,
        txn_base: str = "",
    ) -> None:
        """`txn_base`: the answer's own messages get the ids `<base>-<piece>` (a send
        repeated by a later process is the same event); '' for random ids."""
        self._client, self._room = client, room_id
        self._txn_base = txn_base
        self.resumed = False  # an earlier process may have shown this answer already
        self._every_s, self._clock = every_s, clock
        self.text = ""
        self.event_id: str | None = None
        self._shown: dict[str, Any] | None = None
        self._last = 0.0
        self.edits = 0

    async def grow(self, piece: str) -> None:
        self.text += piece
        if self.event_id is not None and self._clock() - self._last < self._every_s:
            return  # paced: the text waits for the next edit or the final one
        pieces = contents(self.text)
        if pieces:
            await self._show(pieces[0])

    async def finish(self, markdown: str) -> list[str]:
        """The final text: the streamed message edited to its first piece, the rest after."""
        pieces = contents(markdown)
        if not pieces:
            return []
        sent, first = [], 0
        if self.event_id is None and self.resumed:  # its first message may be a draft
            self.event_id = await self._client.send(self._room, pieces[0], self._txn(0))
            self._shown, self._last = None, self._clock()  # edited to the final text below
        if self.event_id is not None:
            await self._show(pieces[0])
            sent.append(self.event_id)
            first = 1
        for n in range(first, len(pieces)):
            sent.append(await self._client.send(self._room, pieces[n], self._txn(n)))
        return sent

    def _txn(self, piece: int) -> str:
        return f"{self._txn_base}-{piece}" if self._txn_base else txn()

    async def _show(self, content: dict[str, Any]) -> None:
        if content == self._shown:
            return
        if self.event_id is None:
            self.event_id = await self._client.send(self._room, content, self._txn(0))
        else:
            await self._client.send(self._room, edit(self.event_id, content), txn())
            self.edits += 1
        self._shown, self._last = content, self._clock()


def _read(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


__all__ = ["Outgoing", "Stream", "answer_txn", "with_offers"]
