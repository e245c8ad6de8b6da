"""The Telegram channel: python-telegram-bot inside roost's own event loop.

A thin translator: Telegram updates in, `Inbound` to the core's `answer`,
the core's reply out through `TelegramReply`. One `TypeHandler` sees every
update: edited messages, channel posts and other update kinds are ignored
(logged at debug), and so are messages that speak for a chat rather than a
person (automatic forwards from a linked channel, sender 777000,
`sender_chat` set); groups that are not allow-listed are ignored, and in
allowed groups only messages that mention the bot, reply to it or use
`/cmd@botname` are read. Everything else becomes an `Inbound` carrying the
bot's username (`bot_name`), whether the chat is private, whether the
message has text (a caption counts; photos and documents are fetched by
`telegram_files_in`) and the text it replies to (`quoted`: Telegram's partial
`quote`, else the replied-to text or caption); who may talk, `/pair`, the
one-time refusal, commands for another bot and the per-chat order are the
core's. In groups each person has their own session (chat id
"<group>:<user>"). The lifecycle is manual (initialize, start,
updater.start_polling and the reverse) - never `run_polling`; webhook mode
mounts a route on the web channel's aiohttp app and checks
`X-Telegram-Bot-Api-Secret-Token` in constant time.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from aiohttp import web
from telegram import BotCommand, Message, Update
from telegram.constants import ChatType
from telegram.error import InvalidToken, NetworkError, TelegramError
from telegram.ext import AIORateLimiter, Application, ApplicationBuilder, ContextTypes, TypeHandler

from bridge.channels import ChannelStartError
from bridge.channels.telegram_actions import attach, pressed
from bridge.channels.telegram_files import send_files
from bridge.channels.telegram_files_in import FilesIn, file_base_url
from bridge.channels.telegram_outbox import OutboxSender
from bridge.channels.telegram_send import DeliveryError, Sender, SendFailed, SendPolicy
from bridge.channels.telegram_stream import StreamingReply, StreamTiming, Typing
from bridge.core.commands import COMMAND_NAME
from bridge.core.config import ConfigError
from bridge.core.config_sections import TelegramSettings
from bridge.types.messages import Answer, Final, Inbound

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
ALLOWED_UPDATES = [
    "message",
    "edited_message",
    "channel_post",
    "edited_channel_post",
    "callback_query",  # a press of a reply's button (bridge.channels.telegram_actions)
]
_SECRET_OK = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
# the "Telegram" service account that posts a linked channel's automatic forwards
SERVICE_SENDER = 777000
# a final reply the channel could not deliver: kept for later (True) or not (False)
Undelivered = Callable[[Inbound, str], Awaitable[bool]]


def _from_a_channel(msg: Message) -> bool:
    """Automatic forwards from a linked channel, and messages sent on behalf of
    a chat (sender_chat: a channel or an anonymous admin) speak for no person."""
    return bool(
        msg.is_automatic_forward
        or msg.sender_chat is not None
        or (msg.from_user is not None and msg.from_user.id == SERVICE_SENDER)
    )


def _quoted(msg: Message) -> str:
    """What a reply quotes: the part the person selected (`quote`), else the whole
    replied-to message's text or caption; '' for a message that replies to nothing."""
    if msg.quote is not None and msg.quote.text:
        return msg.quote.text
    replied = msg.reply_to_message
    if replied is None:
        return ""
    return replied.text or replied.caption or ""


@dataclass(frozen=True, slots=True)
class TelegramOptions:
    poll_timeout_s: float = 10.0
    timing: StreamTiming = field(default_factory=StreamTiming)
    send: SendPolicy = field(default_factory=SendPolicy)
    rate_limiter: bool = True
    concurrent_updates: int = 256
    bootstrap_attempts: int = 5
    bootstrap_backoff_s: float = 1.0
    stop_grace_s: float = 10.0


class TelegramChannel:
    name = "telegram"

    def __init__(
        self,
        settings: TelegramSettings,
        answer: Answer,
        command_list: Callable[[], list[dict[str, str]]],
        options: TelegramOptions | None = None,
        *,
        undelivered: Undelivered | None = None,
        send_failed: SendFailed | None = None,
        files_in: FilesIn | None = None,
    ) -> None:
        if settings.token is None:
            raise ConfigError("telegram.token is required for the Telegram channel")
        # python-telegram-bot 22.x opt-in: durations as timedelta (otherwise every 429
        # raises a PTBDeprecationWarning inside the library)
        os.environ.setdefault("PTB_TIMEDELTA", "true")
        self._settings = settings
        self._answer = answer
        self._commands = command_list
        self._opts = options or TelegramOptions()
        self.allowed_groups = frozenset(settings.allowed_groups)  # a reload may replace it
        self._webhook = settings.mode == "webhook"
        self._secret = self._webhook_secret(settings) if self._webhook else ""
        builder: ApplicationBuilder[Any, Any, Any, Any, Any, Any] = (
            ApplicationBuilder()
            .token(settings.token.get_secret_value())
            .base_url(settings.api_base_url)
            .base_file_url(file_base_url(settings.api_base_url))
            .concurrent_updates(self._opts.concurrent_updates)
        )
        if self._opts.rate_limiter:
            builder = builder.rate_limiter(AIORateLimiter(max_retries=2))
        if self._webhook:
            builder = builder.updater(None)
        self.app: Application = builder.build()  # type: ignore[type-arg]
        self.app.add_handler(TypeHandler(Update, self._on_update))
        self.app.add_error_handler(self._on_error)
        self.sender = Sender(self.app.bot, self._opts.send)
        if send_failed is not None:
            self.sender.failed = send_failed  # every send path: replies, drafts, typing
        self.deliver = OutboxSender(self.app.bot, self._opts.send)  # the outbox's deliver
        self.undelivered = undelivered
        self.files_in = files_in  # photos and documents in (None: text only)
        self.timing = self._opts.timing
        self._tasks: set[asyncio.Task[object]] = set()
        self._running = False

    @staticmethod
    def _webhook_secret(settings: TelegramSettings) -> str:
        if not settings.webhook_url:
            raise ConfigError("telegram.webhook_url is required when telegram.mode is 'webhook'")
        if settings.webhook_secret is None:
            return secrets.token_urlsafe(32)
        secret = settings.webhook_secret.get_secret_value()
        if not _SECRET_OK.fullmatch(secret):
            raise ConfigError("telegram.webhook_secret: 1-256 of A-Z a-z 0-9 _ -")
        return secret

    @property
    def webhook_path(self) -> str:
        path = urlparse(self._settings.webhook_url or "").path
        return path if path not in ("", "/") else "/telegram/webhook"

    def mount(self, app: web.Application) -> None:
        """Add the webhook route to the web channel's app (before it starts)."""
        app.router.add_post(self.webhook_path, self._on_webhook)

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        await self._initialize()
        await self.app.start()
        await self._register_commands()
        if self._webhook:
            await self.app.bot.set_webhook(
                self._settings.webhook_url or "",
                secret_token=self._secret,
                allowed_updates=ALLOWED_UPDATES,
            )
        else:
            assert self.app.updater is not None
            await self.app.updater.start_polling(
                timeout=int(self._opts.poll_timeout_s),
                allowed_updates=ALLOWED_UPDATES,
                error_callback=self._on_poll_error,
            )
        self._running = True
        log.info("telegram: @%s ready (%s)", self.app.bot.username, self._settings.mode)

    async def _initialize(self) -> None:
        attempt = 0
        while True:
            try:
                await self.app.initialize()
                return
            except InvalidToken:
                await self.app.shutdown()
                raise ConfigError(
                    "telegram.token: Telegram rejected the bot token (check "
                    "ROOST_TELEGRAM__TOKEN and ROOST_TELEGRAM__API_BASE_URL)"
                ) from None
            except NetworkError as exc:
                attempt += 1
                if attempt >= self._opts.bootstrap_attempts:
                    await self.app.shutdown()
                    raise ChannelStartError(
                        f"telegram: cannot reach the Bot API ({exc}); check the network and "
                        "ROOST_TELEGRAM__API_BASE_URL"
                    ) from None
                delay = self._opts.bootstrap_backoff_s * 2 ** (attempt - 1)
                log.warning("telegram: Bot API not reachable (%s); retry in %.1fs", exc, delay)
                await asyncio.sleep(delay)

    async def _register_commands(self) -> None:
        rows = [
            BotCommand(c["name"], c["summary"][:256] or c["name"])
            for c in self._commands()
            if COMMAND_NAME.fullmatch(c["name"])
        ]
        try:
            await self.app.bot.set_my_commands(rows[:100])
        except TelegramError as exc:
            log.warning("telegram: could not register the command menu: %s", exc)

    async def stop(self) -> None:
        self._running = False
        if self.app.updater is not None and self.app.updater.running:
            await self.app.updater.stop()
        pending = {t for t in self._tasks if not t.done()}
        if pending:
            await asyncio.wait(pending, timeout=self._opts.stop_grace_s)
        if self.app.running:
            await self.app.stop()
        await self.app.shutdown()

    # -- input -------------------------------------------------------------------------------

    async def _on_webhook(self, request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "")
        if not (given and hmac.compare_digest(given.encode(), self._secret.encode())):
            return web.Response(status=401)
        if not self._running:
            return web.Response(status=503)
        try:
            update = Update.de_json(await request.json(), self.app.bot)
        except (ValueError, TypeError, KeyError):
            return web.Response(status=400)
        await self.app.update_queue.put(update)
        return web.Response(text="ok")

    async def _on_update(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            if isinstance(update, Update):
                await self._dispatch(update)
        finally:
            if task is not None:
                self._tasks.discard(task)

    async def _dispatch(self, update: Update) -> None:
        if update.callback_query is not None:  # a one-tap action: its command, as if typed
            await pressed(
                update.callback_query,
                self.app.bot.username,
                self.allowed_groups,
                self._answer,
                lambda inbound, chat_id: TelegramReply(self, chat_id, None, inbound),
            )
            return
        msg = update.message
        if msg is None:
            kind = "edited message" if update.edited_message else "channel post or other"
            log.debug("telegram: ignoring an update (%s)", kind)
            return
        user = msg.from_user
        if user is None or user.is_bot or _from_a_channel(msg):
            log.debug("telegram: ignoring a message from a bot or a channel")
            return
        chat = msg.chat
        private = chat.type == ChatType.PRIVATE
        if not private and (chat.id not in self.allowed_groups or not self._addressed(msg)):
            return
        text = msg.text if msg.text is not None else msg.caption
        inbound = Inbound(
            "telegram",
            str(user.id),
            str(chat.id) if private else f"{chat.id}:{user.id}",
            self._clean(text) if text is not None else "",
            str(msg.message_id),
            is_private=private,
            display_name=user.first_name or "",
            has_text=msg.text is not None,
            bot_name=self.app.bot.username,
            quoted=_quoted(msg),
        )
        if self.files_in is not None:  # a photo or document: fetched into the tenant's inbox
            inbound = await self.files_in.receive(self.app.bot, msg, inbound)
        reply = TelegramReply(self, chat.id, None if private else msg.message_id, inbound)
        try:
            await self._answer(inbound, reply)
        except BaseException:
            await reply.abort()
            raise

    def _addressed(self, msg: Message) -> bool:
        bot = self.app.bot
        me = f"@{bot.username}".lower()
        replied = msg.reply_to_message
        if replied is not None and replied.from_user and replied.from_user.id == bot.id:
            return True
        kinds: list[str | None] = ["mention", "text_mention", "bot_command"]
        found = msg.parse_entities(kinds) if msg.text else msg.parse_caption_entities(kinds)
        for entity, value in found.items():
            if entity.type == "mention" and value.lower() == me:
                return True
            if entity.type == "text_mention" and entity.user and entity.user.id == bot.id:
                return True
            if entity.type == "bot_command" and value.lower().endswith(me):
                return True
        return False

    def _clean(self, text: str) -> str:
        """Drop mentions of the bot ("@roost_bot what's up" -> "what's up")."""
        name = self.app.bot.username
        cleaned = re.sub(rf"(?<![/\w])@{re.escape(name)}\b", " ", text, flags=re.IGNORECASE)
        return re.sub(r"[ \t]{2,}", " ", cleaned).strip()

    async def _on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        log.error("telegram: handler failed", exc_info=context.error)

    def _on_poll_error(self, exc: TelegramError) -> None:
        log.warning("telegram: polling failed (%s: %s); retrying", type(exc).__name__, exc)


class TelegramReply:
    """One message's answer in one chat: typing, streamed drafts, the final text
    (handed to the outbox, key `reply:<msg_id>`, when it fails after the retries)."""

    def __init__(
        self, channel: TelegramChannel, chat_id: int, reply_to: int | None, inbound: Inbound
    ) -> None:
        self._sender, self._chat, self._msg_id = channel.sender, chat_id, inbound.msg_id
        self._bot = channel.app.bot
        self._inbound = inbound
        self._undelivered = channel.undelivered
        self._timing = channel.timing
        self._stream = StreamingReply(channel.sender, chat_id, reply_to, self._timing)

    def working(self) -> Typing:
        return Typing(self._sender, self._chat, self._timing.typing_every_s)

    async def delta(self, piece: str) -> None:
        await self._stream.on_delta(piece)

    async def send(self, final: Final) -> None:
        try:
            shown = await self._stream.finish(final.text)
            if final.actions and shown:  # buttons on the last message of the reply
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
        await self._stream.abort()
