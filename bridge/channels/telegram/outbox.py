"""Proactive Telegram messages: an outbox entry to a chat, part by part, failures classified.

`OutboxSender` delivers one outbox entry (a reminder, a job's answer, a reply
that failed earlier) through a `Sender` that tries once: the outbox does the
retrying, with backoff across restarts, so a Bot API outage never holds a
scheduler slot. A long text goes out in several messages; each part is
recorded as it arrives (`PartLog`), so a retry resumes at the first part
that did not: a part is never sent twice. A part some message already shows
in an older version (the draft of a streamed reply) is edited into place
instead of sent. A part whose send had no answer (`Unconfirmed`) is recorded
`unknown` and never sent again; the entry then ends with one line saying
Telegram did not confirm a part. Telegram's failures become the outbox's
`DeliveryError`: the bot blocked or kicked (403) and a chat that does not
exist are permanent (dead-lettered at once, visible in `roost jobs`); flood
control (429) is retried no sooner than its `retry_after`; network errors
and timeouts are retried with backoff. Chat ids: a private chat is the
user's id, a group person's chat is "<group>:<user>" and goes to the group.
"""

from __future__ import annotations

import logging

from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TimedOut

from bridge.channels.common.parts import NoParts, settled
from bridge.channels.common.render import Rendered
from bridge.channels.common.split import LIMIT
from bridge.channels.telegram.send import DeliveryError as SendFailed
from bridge.channels.telegram.send import (
    MessageGone,
    Rejected,
    Sender,
    Unconfirmed,
    retry_after_s,
)
from bridge.channels.telegram.stream import laid_out, layout
from bridge.schedule.outbox import DeliveryError, OutboxEntry
from bridge.schedule.outbox_parts import OutboxPart, PartLog

log = logging.getLogger(__name__)
UNCONFIRMED_PART = (
    "⚠️ Telegram did not confirm that every part of the message above arrived. If a part "
    "is missing, ask me to send it again."
)


def chat_id_of(chat: str) -> int:
    """The Telegram chat a roost chat id posts to ("<group>:<user>" -> the group)."""
    return int(chat.partition(":")[0])


def classify(exc: BaseException) -> DeliveryError:
    """The outbox's view of a failed Telegram call (the Sender's error or its cause)."""
    cause = exc.__cause__ if isinstance(exc, SendFailed) and exc.__cause__ else exc
    if isinstance(cause, Forbidden):
        return DeliveryError("forbidden", permanent=True)
    if isinstance(cause, BadRequest):
        text = str(cause).lower()
        if "not found" in text or "chat_id is empty" in text:
            return DeliveryError("not_found", permanent=True)
        return DeliveryError("rejected", permanent=True)
    if isinstance(cause, RetryAfter):
        return DeliveryError("rate_limited", retry_after_ms=int(retry_after_s(cause) * 1000))
    if isinstance(cause, TimedOut):
        return DeliveryError("timeout")
    if isinstance(cause, NetworkError):
        return DeliveryError("network")
    return DeliveryError("unknown")


class OutboxSender:
    """Delivers outbox entries to Telegram, one attempt per call, part by part."""

    def __init__(self, sender: Sender, parts: PartLog | None = None) -> None:
        self._sender = sender.once()  # shares the channel's per-chat pacing
        self._parts: PartLog = parts if parts is not None else NoParts()

    async def __call__(self, entry: OutboxEntry) -> None:
        try:
            chat_id = chat_id_of(entry.chat)
        except ValueError:
            raise DeliveryError("not_found", permanent=True) from None
        chunks = await laid_out(layout, entry.text, LIMIT)
        known = dict(await self._parts.parts(entry.id))
        try:
            for idx, chunk in enumerate(chunks):
                done = await self._part(entry.id, chat_id, idx, chunk, known.get(idx))
                known[idx] = done
            unknown = any(p.state == "unknown" for p in known.values())
            if unknown and len(chunks) not in known:  # said once, after the last part
                notice = Rendered(UNCONFIRMED_PART)
                await self._part(entry.id, chat_id, len(chunks), notice, None)
        except (SendFailed, BadRequest, NetworkError) as exc:
            raise classify(exc) from exc

    async def _part(
        self, entry_id: int, chat_id: int, idx: int, chunk: Rendered, part: OutboxPart | None
    ) -> OutboxPart:
        """Make part `idx` show `chunk` unless it already does (or may); record it."""
        if part is not None and settled(part):
            return part
        try:
            if part is not None and part.ref:  # a message shows an older text: edit it
                message_id = await self._edit(chat_id, int(part.ref), chunk)
            else:
                message_id = await self._sender.send(chat_id, chunk)
            done = OutboxPart(idx, "sent", str(message_id))
        except Unconfirmed as exc:
            log.warning("outbox: part %d of entry %d is unconfirmed: %s", idx + 1, entry_id, exc)
            done = OutboxPart(idx, "unknown")
        await self._parts.mark(entry_id, done)
        return done

    async def _edit(self, chat_id: int, message_id: int, chunk: Rendered) -> int:
        """Edit a message into `chunk`; one that is gone or cannot be edited is
        replaced by a new message. Returns the id that shows it."""
        try:
            await self._sender.edit(chat_id, message_id, chunk)
        except (MessageGone, Rejected):
            return await self._sender.send(chat_id, chunk)
        return message_id
