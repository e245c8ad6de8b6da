"""Proactive Telegram messages: an outbox entry to a chat, failures classified.

`OutboxSender` delivers one outbox entry (a reminder, a job's answer, a reply
that failed earlier) through a `Sender` that tries once: the outbox does the
retrying, with backoff across restarts, so a Bot API outage never holds a
scheduler slot. Telegram's failures become the outbox's `DeliveryError`:
the bot blocked or kicked (403) and a chat that does not exist are permanent
(dead-lettered at once, visible in `roost jobs`); flood control (429) is
retried no sooner than its `retry_after`; network errors and timeouts are
retried with backoff. Chat ids: a private chat is the user's id, a group
person's chat is "<group>:<user>" and goes to the group.
"""

from __future__ import annotations

from dataclasses import replace

from telegram import Bot
from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TimedOut

from bridge.channels.telegram_send import DeliveryError as SendFailed
from bridge.channels.telegram_send import Sender, SendPolicy, retry_after_s
from bridge.channels.telegram_split import LIMIT
from bridge.channels.telegram_stream import laid_out, layout
from bridge.schedule.outbox import DeliveryError, OutboxEntry


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
    """Delivers outbox entries to Telegram, one attempt each."""

    def __init__(self, bot: Bot, policy: SendPolicy) -> None:
        once = replace(policy, attempts=1, flood_attempts=0)
        self._sender = Sender(bot, once)

    async def __call__(self, entry: OutboxEntry) -> None:
        try:
            chat_id = chat_id_of(entry.chat)
        except ValueError:
            raise DeliveryError("not_found", permanent=True) from None
        chunks = await laid_out(layout, entry.text, LIMIT)
        try:
            for chunk in chunks:
                await self._sender.send(chat_id, chunk)
        except (SendFailed, BadRequest, NetworkError) as exc:
            raise classify(exc) from exc
