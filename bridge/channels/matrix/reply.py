"""One message's answer in one Matrix room, as the core's reply object.

`working()` sends a read receipt for the person's message and shows the
typing notification (renewed every 20 seconds while the turn runs, cleared
at the end). `delta` streams the answer by editing one message
(`send.Stream`: `m.replace`, paced by `[matrix] edit_every_s`); `send`
writes the final text (offers as lines: Matrix has no buttons), then the
files the reply hands out, then the spoken answer when the chat asked for
it. A final text that cannot be delivered after the retries goes to the
outbox (`reply:<msg_id>`), when the composition root wired it. The answer's
messages have transaction ids made from the message it answers
(`send.answer_txn`): sent again by a later process, they are the same events.
`on_settled` is awaited once the final text was delivered or kept, before
files and a voice message follow (the durable inbox marks the message done
then: a kill while a voice message is made never answers it twice).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from bridge.channels.matrix.api import MatrixError
from bridge.channels.matrix.send import Outgoing, Stream, answer_txn, with_offers
from bridge.types.messages import Final, Inbound

log = logging.getLogger("bridge.channels.matrix")
TYPING_EVERY_S = 20.0  # the notification is asked for 25 s
NOT_SPOKEN = "🔇 The voice message could not be sent; the text above is the whole answer."
Undelivered = Callable[[Inbound, str], Awaitable[bool]]
Speak = Callable[[Inbound, str], Awaitable[bytes | str | None]]


class MatrixReply:
    def __init__(
        self,
        out: Outgoing,
        inbound: Inbound,
        room_id: str,
        event_id: str,
        me: str,
        *,
        every_s: float = 1.5,
        clock: Callable[[], float] = time.monotonic,
        undelivered: Undelivered | None = None,
        speak: Speak | None = None,
    ) -> None:
        self._out, self._inbound = out, inbound
        self._room, self._event, self._me = room_id, event_id, me
        self.stream = Stream(out.client, room_id, every_s, clock, txn_base=answer_txn(event_id))
        self._undelivered, self._speak = undelivered, speak
        self.refused: str | None = None  # the text of a refusal (the channel may leave after)
        self.on_settled: Callable[[], Awaitable[None]] | None = None  # text delivered or kept

    @contextlib.asynccontextmanager
    async def working(self) -> AsyncIterator[None]:
        task = asyncio.create_task(self._typing())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            with contextlib.suppress(MatrixError):
                await self._out.client.typing(self._room, self._me, False)

    async def _typing(self) -> None:
        client = self._out.client
        with contextlib.suppress(MatrixError):
            await client.receipt(self._room, self._event)
        while True:
            with contextlib.suppress(MatrixError):
                await client.typing(self._room, self._me, True)
            await asyncio.sleep(TYPING_EVERY_S)

    async def delta(self, piece: str) -> None:
        try:
            await self.stream.grow(piece)
        except MatrixError as exc:  # the final text tries again
            log.info("matrix: a streamed edit failed: %s", exc)

    async def send(self, final: Final) -> None:
        if final.kind == "silent":
            return
        if final.kind == "refusal":
            self.refused = final.text
        text = with_offers(final.text, final.actions)
        try:
            await self.stream.finish(text)
        except MatrixError as exc:
            kept = await self._keep(text)
            log.error(
                "matrix: the answer to %s was not delivered: %s%s",
                self._inbound.msg_id,
                exc,
                "; it waits in the outbox" if kept else "",
            )
            if kept and self.on_settled is not None:
                await self.on_settled()
            return
        if self.on_settled is not None:
            await self.on_settled()
        for file in final.files:
            try:
                await self._out.file(self._room, file)
            except MatrixError as exc:
                log.error("matrix: a file was not delivered: %s", exc)
        if self._speak is not None and final.kind == "answer" and final.text.strip():
            await self._spoken(final.text)

    async def _spoken(self, text: str) -> None:
        try:
            result = await self._speak(self._inbound, text) if self._speak else None
        except Exception:
            log.exception("matrix: speaking an answer failed")
            result = NOT_SPOKEN
        try:
            if isinstance(result, str):
                await self._out.notice(self._room, result)
            elif isinstance(result, bytes):
                await self._out.voice(self._room, result)
        except MatrixError as exc:
            log.error("matrix: a voice message was not delivered: %s", exc)

    async def _keep(self, text: str) -> bool:
        if self._undelivered is None:
            return False
        try:
            return await self._undelivered(self._inbound, text)
        except Exception:
            log.exception("matrix: could not keep the undelivered answer")
            return False
