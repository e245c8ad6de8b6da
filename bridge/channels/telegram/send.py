"""Sending to Telegram reliably: pacing per chat, retries, plain-text fallback.

Every outgoing call of the channel goes through `Sender`:
- per chat, a small token bucket (a burst of a few, then about one per
  second) so one busy chat cannot trip Telegram's per-chat flood limit; the
  global 30/s and the 20/min group limits are python-telegram-bot's
  `AIORateLimiter`, which also retries a 429 after its `retry_after`;
- a 429 that still comes through waits `retry_after`; a 5xx or a network
  error is retried with exponential backoff; after the last attempt the
  failure is raised as `DeliveryError` so the caller can log it (a reply is
  never dropped silently);
- a call that makes a new message (sendMessage, sendDocument, sendPhoto,
  sendVoice) is never repeated once its outcome is unknown: when the request
  reached Telegram and no answer came (a read timeout, the connection cut
  while waiting), Telegram may well show the message already, and the Bot API
  has no idempotency key, so a retry could show it twice. That raises
  `Unconfirmed` at once; edits and deletes are idempotent and retried as
  before. Failures before the request left (connect or pool timeouts,
  refused connections) and HTTP errors are retried. New messages wait
  `send_timeout_s` for Telegram's answer, so a slow Bot API is waited for
  rather than given up on;
- "can't parse entities" (or a link address Telegram refuses) resends the
  same text without entities;
- "message is not modified" counts as success;
- any other 400 for one text is `Rejected`, so the caller can show a marker
  in its place and go on with the rest of the answer.
`Sender.failed(kind)` is told of every send that failed for good, whichever
path it took (`reply`, `command`, `draft`, `rejected`, `typing`): the
composition root counts them for `/metrics`.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, TypeVar

from telegram import (
    Bot,
    InlineKeyboardMarkup,
    LinkPreviewOptions,
    Message,
    MessageEntity,
    ReplyParameters,
)
from telegram.constants import ChatAction
from telegram.error import (
    BadRequest,
    Forbidden,
    NetworkError,
    RetryAfter,
    TelegramError,
    TimedOut,
)

from bridge.channels.common.render import Rendered
from bridge.channels.telegram.pace import ChatPacer

log = logging.getLogger(__name__)
T = TypeVar("T")
# No link previews, on every message and edit: Telegram's servers would fetch the
# first URL of an answer with no click, so a model steered by injected content could
# send what its context holds to any host in a URL's query (the attacker pass of
# session 32). WhatsApp's sends say `preview_url: false` for the same reason.
NO_PREVIEW = LinkPreviewOptions(is_disabled=True)
SendFailed = Callable[[str], None]
"""Told the kind of each Telegram send that failed for good."""


def _ignore(kind: str) -> None:
    return None


class DeliveryError(Exception):
    """Telegram did not take the message after every retry."""


class MessageGone(DeliveryError):
    """The message to edit or delete no longer exists."""


class Rejected(DeliveryError):
    """Telegram refused this one text (400: empty, too long, ...); others may pass."""


class Unconfirmed(DeliveryError):
    """A new message whose request reached Telegram but got no answer: it may be
    shown. It is not sent again (that could show it twice)."""


# httpx errors (the cause python-telegram-bot chains) raised after the request was sent
AFTER_SENDING = frozenset({"ReadTimeout", "ReadError", "RemoteProtocolError"})


def outcome_unknown(exc: NetworkError) -> bool:
    """Did the request reach Telegram without an answer coming back?"""
    cause = exc.__cause__
    if cause is None:
        return isinstance(exc, TimedOut)  # a timeout of unknown kind: assume it arrived
    return type(cause).__name__ in AFTER_SENDING


@dataclass(frozen=True, slots=True)
class SendPolicy:
    attempts: int = 6  # for 5xx / network errors
    backoff_s: float = 0.5  # doubled per attempt
    backoff_max_s: float = 16.0
    flood_attempts: int = 5  # 429s that reach us after the rate limiter's own retries
    chat_burst: int = 3
    chat_rate_per_s: float = 1.0
    send_timeout_s: float = 20.0  # how long a new message waits for Telegram's answer

    def once(self) -> SendPolicy:
        """The same policy, one attempt per call (the outbox does the retrying)."""
        return replace(self, attempts=1, flood_attempts=0)


def retry_after_s(exc: RetryAfter) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def _entities(chunk: Rendered) -> list[MessageEntity] | None:
    if not chunk.entities:
        return None
    return [
        MessageEntity(e.type, e.offset, e.length, url=e.url, language=e.language)
        for e in chunk.entities
    ]


def _parse_error(exc: BadRequest) -> bool:
    """Telegram refused the entities (their nesting, or a link's address)."""
    text = str(exc).lower()
    return "parse entities" in text or "entity" in text or "url" in text


class Sender:
    def __init__(
        self,
        bot: Bot,
        policy: SendPolicy | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        failed: SendFailed = _ignore,
    ) -> None:
        self._bot = bot
        self.failed = failed
        self.policy = policy or SendPolicy()
        self._sleep = sleep
        self.pacer = ChatPacer(self.policy.chat_burst, self.policy.chat_rate_per_s, sleep=sleep)
        self._single: Sender | None = None  # `once()`, made at its first call

    async def send(
        self,
        chat_id: int,
        chunk: Rendered,
        reply_to: int | None = None,
        markup: InlineKeyboardMarkup | None = None,
    ) -> int:
        """Send one chunk (with an inline keyboard); returns the new message id."""
        reply = (
            ReplyParameters(reply_to, allow_sending_without_reply=True)
            if reply_to is not None
            else None
        )

        async def call(entities: list[MessageEntity] | None) -> Any:
            return await self._bot.send_message(
                chat_id,
                chunk.text,
                entities=entities,
                reply_parameters=reply,
                reply_markup=markup,
                link_preview_options=NO_PREVIEW,
                read_timeout=self.policy.send_timeout_s,
            )

        try:
            message = await self._with_fallback(chat_id, chunk, call, fresh=True)
        except BadRequest as exc:
            raise Rejected(str(exc)) from exc
        return int(message.message_id)

    async def edit(
        self,
        chat_id: int,
        message_id: int,
        chunk: Rendered,
        markup: InlineKeyboardMarkup | None = None,
    ) -> None:
        """Show `chunk` in a sent message; its keyboard becomes `markup` (None: none)."""

        async def call(entities: list[MessageEntity] | None) -> Any:
            return await self._bot.edit_message_text(
                chunk.text,
                chat_id=chat_id,
                message_id=message_id,
                entities=entities,
                reply_markup=markup,
                link_preview_options=NO_PREVIEW,
            )

        try:
            await self._with_fallback(chat_id, chunk, call)
        except BadRequest as exc:
            text = str(exc).lower()
            if "not modified" in text:
                return
            if "not found" in text:
                raise MessageGone(str(exc)) from exc
            raise Rejected(str(exc)) from exc

    async def markup(
        self, chat_id: int, message_id: int, markup: InlineKeyboardMarkup | None
    ) -> None:
        """Replace a sent message's inline keyboard (None: take it off)."""
        try:
            await self._retrying(
                chat_id,
                lambda: self._bot.edit_message_reply_markup(
                    chat_id, message_id, reply_markup=markup
                ),
            )
        except BadRequest as exc:
            text = str(exc).lower()
            if "not modified" in text:
                return
            if "not found" in text:
                raise MessageGone(str(exc)) from exc
            raise Rejected(str(exc)) from exc

    async def document(self, chat_id: int, data: bytes, name: str) -> int:
        """Upload one file as a document (multipart); returns the new message id."""
        return await self._upload(chat_id, self._bot.send_document, data, name)

    async def voice(self, chat_id: int, data: bytes) -> int:
        """Upload OGG/Opus audio as a voice message (sendVoice); returns the message id."""
        return await self._upload(chat_id, self._bot.send_voice, data, "answer.ogg")

    async def photo(self, chat_id: int, data: bytes, name: str) -> int:
        """Upload one image as a photo (multipart); returns the new message id."""
        return await self._upload(chat_id, self._bot.send_photo, data, name)

    async def _upload(
        self, chat_id: int, send: Callable[..., Awaitable[Message]], data: bytes, name: str
    ) -> int:
        """One multipart upload through `send` (a Bot method), never repeated once it may
        have arrived; a refusal is `Rejected`."""
        try:
            message = await self._retrying(
                chat_id,
                lambda: send(chat_id, data, filename=name, read_timeout=self.policy.send_timeout_s),
                fresh=True,
            )
        except BadRequest as exc:
            raise Rejected(str(exc)) from exc
        return int(message.message_id)

    async def delete(self, chat_id: int, message_id: int) -> None:
        try:
            await self._retrying(chat_id, lambda: self._bot.delete_message(chat_id, message_id))
        except BadRequest as exc:
            raise MessageGone(str(exc)) from exc

    async def typing(self, chat_id: int) -> None:
        """One typing indicator; failures are harmless and only logged."""
        try:
            await self._bot.send_chat_action(chat_id, ChatAction.TYPING)
        except TelegramError as exc:
            log.debug("typing indicator failed: %s", type(exc).__name__)
            self.failed("typing")

    async def _with_fallback(
        self,
        chat_id: int,
        chunk: Rendered,
        call: Callable[[list[MessageEntity] | None], Awaitable[T]],
        fresh: bool = False,
    ) -> T:
        entities = _entities(chunk)
        try:
            return await self._retrying(chat_id, lambda: call(entities), fresh)
        except BadRequest as exc:
            if entities is None or not _parse_error(exc):
                raise
            log.warning("telegram rejected the formatting (%s); sending plain text", exc)
            return await self._retrying(chat_id, lambda: call(None), fresh)

    def once(self) -> Sender:
        """A sender that tries each call once, sharing this one's pacing and `failed`
        (made once and kept: every reply asks for it)."""
        single = self._single
        if single is None or single.failed is not self.failed:
            single = Sender(self._bot, self.policy.once(), self._sleep, self.failed)
            single.pacer = self.pacer
            self._single = single
        return single

    async def _retrying(
        self, chat_id: int, call: Callable[[], Awaitable[T]], fresh: bool = False
    ) -> T:
        """`fresh`: the call makes a new message, so it is not repeated once its
        outcome is unknown (`Unconfirmed`)."""
        policy = self.policy
        failures = floods = 0
        while True:
            await self.pacer.wait(chat_id)
            try:
                return await call()
            except RetryAfter as exc:
                floods += 1
                if floods > policy.flood_attempts:
                    raise DeliveryError(f"flood control: {exc}") from exc
                wait = retry_after_s(exc)
                log.warning("telegram flood control: waiting %.1fs (chat %s)", wait, chat_id)
                await self._sleep(wait)
            except BadRequest:
                raise
            except Forbidden as exc:
                raise DeliveryError(f"forbidden: {exc}") from exc
            except NetworkError as exc:
                if fresh and outcome_unknown(exc):
                    raise Unconfirmed(f"no answer from Telegram: {exc}") from exc
                failures += 1
                if failures >= policy.attempts:
                    raise DeliveryError(f"network: {exc}") from exc
                delay = min(policy.backoff_max_s, policy.backoff_s * 2 ** (failures - 1))
                log.warning("telegram call failed (%s); retry %d in %.1fs", exc, failures, delay)
                await self._sleep(delay)
            except TelegramError as exc:  # InvalidToken, Conflict, ...: retrying cannot help
                raise DeliveryError(f"{type(exc).__name__}: {exc}") from exc
