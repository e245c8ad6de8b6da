"""One message's answer in one WhatsApp chat, as the core's reply object.

`working()` marks the person's message read and shows the typing indicator
(Meta's "Typing indicators": one call with `status: read` and
`typing_indicator`; it disappears with the answer or after 25 seconds, so
it is shown again every 20 seconds while the turn runs). WhatsApp cannot
edit a sent message, so nothing is streamed: `delta` is ignored and the
final answer goes out whole (`send.lay_out`: split at 4096, offers as
buttons), then the files a reply hands out, then the spoken answer when the
chat asked for it (the app's speak hook). A final text that cannot be
delivered after the retries goes to the outbox (`reply:<msg_id>`), when the
composition root wired it, with the pieces that did arrive (`OutboxPart`s,
recorded before the entry can be claimed): the outbox sends only the rest.
The outbox sends text only, so offers whose buttons did not arrive follow
as a second entry (`reply:<msg_id>:offers`, their text lines: what to send
to take one); the outbox keeps a chat's order, so they come after the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable

from bridge.channels.common.parts import Progress
from bridge.channels.whatsapp.buttons import as_text
from bridge.channels.whatsapp.client import GraphError
from bridge.channels.whatsapp.send import Outgoing, lay_out
from bridge.schedule.outbox_parts import OutboxPart
from bridge.schedule.runtime import Undelivered
from bridge.types.messages import Final, Inbound

log = logging.getLogger("bridge.channels.whatsapp")
TYPING_EVERY_S = 20.0  # the indicator lasts 25 s
NOT_SPOKEN = "🔇 The voice message could not be sent; the text above is the whole answer."
Speak = Callable[[Inbound, str], Awaitable[bytes | str | None]]

__all__ = ["NOT_SPOKEN", "Speak", "Undelivered", "WhatsAppReply"]


class WhatsAppReply:
    def __init__(
        self,
        out: Outgoing,
        inbound: Inbound,
        wamid: str,
        *,
        undelivered: Undelivered | None = None,
        speak: Speak | None = None,
        typing_every_s: float = TYPING_EVERY_S,
        settled: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._out, self._inbound, self._wamid = out, inbound, wamid
        self._to = inbound.chat
        self._undelivered, self._speak = undelivered, speak
        self._typing_every_s = typing_every_s
        self._settled = settled  # the answer's text was delivered or kept (before files)

    @contextlib.asynccontextmanager
    async def working(self) -> AsyncIterator[None]:
        first = asyncio.Event()
        task = asyncio.create_task(self._typing(first))
        try:
            yield
        finally:
            # the read receipt goes before the answer, however fast the turn was
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(first.wait(), self._typing_every_s)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _typing(self, first: asyncio.Event) -> None:
        while True:
            await self._out.client.mark_read(self._wamid, typing=True)
            first.set()
            await asyncio.sleep(self._typing_every_s)

    async def delta(self, piece: str) -> None:
        return None  # no edits on WhatsApp: the answer goes out once, whole

    async def send(self, final: Final) -> None:
        if final.kind == "silent":
            return
        layout, progress = lay_out(final.text, final.actions), Progress()
        try:
            await self._out.pieces(self._to, layout, progress=progress)
        except GraphError as exc:
            kept = await self._keep(layout.text, progress.shown())
            offers_lost = layout.offer is not None and not progress.settled(len(layout.pieces) - 1)
            if kept and offers_lost:  # the outbox sends text: the offers as their lines
                await self._keep(as_text(final.actions), key=f"reply:{self._inbound.msg_id}:offers")
            ref = secrets.token_hex(4)
            log.error(
                "whatsapp: the answer to %s was not delivered (ref %s): %s%s",
                self._inbound.msg_id,
                ref,
                exc,
                "; it waits in the outbox" if kept else "",
            )
            if kept and self._settled is not None:
                await self._settled()
            return
        if self._settled is not None:
            await self._settled()
        for file in final.files:
            try:
                await self._out.document(self._to, file)
            except GraphError as exc:
                log.error("whatsapp: a file was not delivered: %s", exc)
        if self._speak is not None and final.kind == "answer" and final.text.strip():
            await self._spoken(final.text)

    async def _spoken(self, text: str) -> None:
        try:
            result = await self._speak(self._inbound, text) if self._speak else None
        except Exception:
            log.exception("whatsapp: speaking an answer failed")
            result = NOT_SPOKEN
        try:
            if isinstance(result, str):
                await self._out.text(self._to, result)
            elif isinstance(result, bytes) and await self._out.voice(self._to, result) is None:
                await self._out.text(self._to, NOT_SPOKEN)
        except GraphError as exc:
            log.error("whatsapp: a voice message was not delivered: %s", exc)

    async def _keep(self, text: str, shown: list[OutboxPart] | None = None, key: str = "") -> bool:
        """Hand `text` to the outbox (under `key`, else the reply's own) with the pieces
        that arrived (it sends the rest)."""
        if self._undelivered is None:
            return False
        try:
            return await self._undelivered(self._inbound, text, key, shown or [])
        except Exception:
            log.exception("whatsapp: could not keep the undelivered answer")
            return False
