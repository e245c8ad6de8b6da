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
updater.start_polling and the reverse) - never `run_polling` - and kept
in the background by `bridge.channels.telegram_connect` (a Telegram that
is down never stops the daemon; `status_line()` says how it is); webhook mode
mounts a route on the web channel's aiohttp app and checks
`X-Telegram-Bot-Api-Secret-Token` in constant time. A known person's voice
note or audio file is fetched into their inbox as an attachment and an
answer may also be spoken (`bridge.channels.telegram_voice`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from aiohttp import web
from telegram import BotCommand, Message, Update
from telegram.constants import ChatType
from telegram.error import TelegramError
from telegram.ext import AIORateLimiter, Application, ApplicationBuilder, ContextTypes, TypeHandler

from bridge.channels.telegram_actions import pressed
from bridge.channels.telegram_connect import Connection, PollWatch
from bridge.channels.telegram_files_in import FilesIn, file_base_url
from bridge.channels.telegram_health import Backoff
from bridge.channels.telegram_input import addressed, from_a_channel, quoted, without_mention
from bridge.channels.telegram_outbox import OutboxSender
from bridge.channels.telegram_reply import TelegramReply, Undelivered
from bridge.channels.telegram_send import Sender, SendFailed, SendPolicy
from bridge.channels.telegram_stream import StreamTiming
from bridge.channels.telegram_voice import InboxFor, Speak, voice_attachment
from bridge.core.commands import COMMAND_NAME
from bridge.core.config import ConfigError
from bridge.core.config_sections import TelegramSettings
from bridge.types.messages import Answer, Attachment, Inbound

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


@dataclass(frozen=True, slots=True)
class TelegramOptions:
    poll_timeout_s: float = 10.0
    timing: StreamTiming = field(default_factory=StreamTiming)
    send: SendPolicy = field(default_factory=SendPolicy)
    rate_limiter: bool = True
    concurrent_updates: int = 256
    reconnect: Backoff = field(default_factory=Backoff)  # retries of a failed start
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
        voice_inbox: InboxFor | None = None,
        speak: Speak | None = None,
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
        token = settings.token.get_secret_value()
        self.connection = Connection(self._connect, self._disconnect, token, self._opts.reconnect)
        if self._webhook:
            builder = builder.updater(None)
        else:
            builder = builder.get_updates_request(PollWatch(self.connection.polled))
        self.app: Application = builder.build()  # type: ignore[type-arg]
        self.app.add_handler(TypeHandler(Update, self._on_update))
        self.app.add_error_handler(self._on_error)
        self.sender = Sender(self.app.bot, self._opts.send)
        if send_failed is not None:
            self.sender.failed = send_failed  # every send path: replies, drafts, typing
        self.deliver = OutboxSender(self.app.bot, self._opts.send)  # the outbox's deliver
        self.undelivered = undelivered
        self.voice_inbox = voice_inbox  # voice notes in (bridge.channels.telegram_voice)
        self.speak = speak  # answers spoken
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
        """Returns once the first attempt ended: connected, or failed and said why
        (then `connection` retries in the background; the daemon goes on)."""
        await self.connection.start()

    def status_line(self) -> str:
        """This channel's line in /status."""
        return self.connection.health.line()

    async def _connect(self) -> str:
        await self.app.initialize()  # getMe; a no-op once it has succeeded
        if not self.app.running:
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
                error_callback=self.connection.polling_failed,
            )
        self._running = True
        return f"@{self.app.bot.username}, {self._settings.mode}"

    async def _disconnect(self) -> None:
        self._running = False
        if self.app.updater is not None and self.app.updater.running:
            await self.app.updater.stop()

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
        await self.connection.stop()
        self._running = False
        if self.app.updater is not None and self.app.updater.running:
            with contextlib.suppress(TelegramError):
                await self.app.updater.stop()
        pending = {t for t in self._tasks if not t.done()}
        if pending:
            await asyncio.wait(pending, timeout=self._opts.stop_grace_s)
        if self.app.running:
            await self.app.stop()
        with contextlib.suppress(TelegramError):
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
                lambda inbound, chat_id: TelegramReply(
                    self.sender,
                    self.timing,
                    self.undelivered,
                    chat_id,
                    None,
                    inbound,
                    self.app.bot,
                    self.speak,
                ),
            )
            return
        msg = update.message
        if msg is None:
            kind = "edited message" if update.edited_message else "channel post or other"
            log.debug("telegram: ignoring an update (%s)", kind)
            return
        user = msg.from_user
        if user is None or user.is_bot or from_a_channel(msg):
            log.debug("telegram: ignoring a message from a bot or a channel")
            return
        chat = msg.chat
        private = chat.type == ChatType.PRIVATE
        if not private and (
            chat.id not in self.allowed_groups
            or not addressed(msg, self.app.bot.id, self.app.bot.username)
        ):
            return
        heard = await self._voice(msg, str(user.id))
        text = msg.text if msg.text is not None else msg.caption  # a file's caption
        inbound = Inbound(
            "telegram",
            str(user.id),
            str(chat.id) if private else f"{chat.id}:{user.id}",
            without_mention(text, self.app.bot.username) if text is not None else "",
            str(msg.message_id),
            is_private=private,
            display_name=user.first_name or "",
            has_text=text is not None,
            bot_name=self.app.bot.username,
            quoted=quoted(msg),
            attachments=heard,
        )
        if self.files_in is not None:  # a photo or document: fetched into the tenant's inbox
            inbound = await self.files_in.receive(self.app.bot, msg, inbound)
        reply_to = None if private else msg.message_id
        reply = TelegramReply(
            self.sender,
            self.timing,
            self.undelivered,
            chat.id,
            reply_to,
            inbound,
            self.app.bot,
            self.speak,
        )
        try:
            await self._answer(inbound, reply)
        except BaseException:
            await reply.abort()
            raise

    async def _voice(self, msg: Message, identity: str) -> tuple[Attachment, ...]:
        """A voice note or audio file of a known person, fetched within its limits."""
        if (msg.voice is None and msg.audio is None) or self.voice_inbox is None:
            return ()
        gate = self.voice_inbox(identity)
        if gate is None:
            return ()
        att = await voice_attachment(self.app.bot, msg, gate)
        return (att,) if att is not None else ()

    async def _on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        log.error("telegram: handler failed", exc_info=context.error)
