"""One message's answer in one Telegram chat, as the core's reply object.

Typing while the turn works, streamed drafts as the answer grows
(`bridge.channels.telegram_stream`), the final text; a final reply that
cannot be delivered after the retries is handed to the outbox (retried
later by the scheduler) when the composition root wired one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable

from telegram import Bot

from bridge.channels.telegram_actions import attach
from bridge.channels.telegram_files import send_files
from bridge.channels.telegram_send import DeliveryError, Sender
from bridge.channels.telegram_stream import StreamingReply, StreamTiming, Typing
from bridge.channels.telegram_voice import Speak, speak_out
from bridge.types.messages import Final, Inbound

log = logging.getLogger("bridge.channels.telegram")
ABORTED = "roost was stopped before the answer was complete"
ABORT_NOTICE_S = 3.0
# a final reply the channel could not deliver: kept for later (True) or not (False)
Undelivered = Callable[[Inbound, str], Awaitable[bool]]


class TelegramReply:
    """One message's answer in one chat: typing, streamed drafts, the final text
    (handed to the outbox, key `reply:<msg_id>`, when it fails after the retries)."""

    def __init__(
        self,
        sender: Sender,
        timing: StreamTiming,
        undelivered: Undelivered | None,
        chat_id: int,
        reply_to: int | None,
        inbound: Inbound,
        bot: Bot | None = None,
        speak: Speak | None = None,
    ) -> None:
        self._sender, self._chat, self._msg_id = sender, chat_id, inbound.msg_id
        self._bot = bot  # puts a reply's one-tap actions on its last message
        self._speak = speak  # the answer spoken too (bridge.channels.telegram_voice)
        self._inbound = inbound
        self._undelivered = undelivered
        self._timing = timing
        self._stream = StreamingReply(sender, chat_id, reply_to, timing)

    def working(self) -> Typing:
        return Typing(self._sender, self._chat, self._timing.typing_every_s)

    async def delta(self, piece: str) -> None:
        await self._stream.on_delta(piece)

    async def send(self, final: Final) -> None:
        try:
            if final.kind == "error" and self._stream.streamed.strip():
                shown = await self._stream.stopped(final.text)  # it broke after text was shown
            else:
                shown = await self._stream.finish(final.text)
            if final.actions and shown and self._bot is not None:  # buttons on the last message
                await attach(self._bot, self._chat, shown[-1], final.actions)
        except DeliveryError as exc:
            self._sender.failed("command" if final.kind == "command" else "reply")
            kept = await self._keep(final.text)
            ref = secrets.token_hex(4)
            log.error(
                "telegram: the answer to chat %s (msg %s) was not delivered (ref %s): %s%s",
                self._chat,
                self._msg_id,
                ref,
                exc,
                "; it waits in the outbox" if kept else "",
            )
        if final.files:  # documents after the text (bridge.channels.telegram_files)
            await send_files(self._sender, self._chat, final.files)
        if self._speak is not None and final.kind == "answer" and final.text.strip():
            await speak_out(self._sender, self._chat, self._speak, self._inbound, final.text)

    async def _keep(self, text: str) -> bool:
        """Hand an undelivered final reply to the outbox (retried later), if wired."""
        if self._undelivered is None:
            return False
        try:
            return await self._undelivered(self._inbound, text)
        except Exception:
            log.exception("telegram: could not keep the undelivered answer")
            return False

    async def abort(self) -> None:
        """The turn ended without a reply (cancelled at shutdown): a draft that
        shows part of an answer gets the notice instead of keeping its cursor."""
        await self._stream.abort()
        if self._stream.streamed.strip() and self._stream.shown:
            with contextlib.suppress(Exception):  # best effort, bounded: it is shutting down
                await asyncio.wait_for(self._stream.stopped(ABORTED), ABORT_NOTICE_S)
