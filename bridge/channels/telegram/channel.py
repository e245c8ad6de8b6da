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
in the background by `bridge.channels.telegram.connect` (a Telegram that
is down never stops the daemon; `status_line()` says how it is); webhook mode
mounts a route on the web channel's aiohttp app and checks
`X-Telegram-Bot-Api-Secret-Token` in constant time. A known person's voice
note or audio file is fetched into their inbox as an attachment and an
answer may also be spoken (`bridge.channels.telegram.voice`).

The bot's calls share `TelegramOptions.connections` pooled HTTP connections
(8; python-telegram-bot's default is 256), and a call waits for a free one
for up to `send.send_timeout_s`. httpcore's pool looks at every connection it
holds for each request it places and each one that ends, so a pool grown to
a burst's size made every call cost O(connections) for as long as they were
kept alive: 100 chats answering at once opened 55-81 connections and spent
14,000-39,000 `is_idle` calls and 7.8-16.6 ms of CPU per round trip, against
about 900 and 4 ms with 16, and 110-330 and 3-3.8 ms with 8
(`bench.telegram_roundtrip`, pacing off). Eight calls in flight carry more
than Telegram's 30 messages/s overall at any round trip below 250 ms.

With a durable inbox (`inbox`, `bridge.channels.telegram.inbox`) no update
is lost to a crash or a restart: each is committed before Telegram hears it
arrived (in `getUpdates`' own request object, `PollWatch`, before the next
poll confirms the offset; in webhook mode before the route answers 200, a
503 when it cannot be stored), answered through `telegram_replay.Durable`
(claimed once, done once its answer was delivered or kept in the outbox),
and what a process left unanswered is answered by the next one at start, in
each chat's order; a message older than `telegram.answer_max_age_s` gets a
line saying it is too old instead (`dropped`). With `cluster` (instances
sharing one bot on PostgreSQL), the webhook route (or the poll) only
stores the update and wakes the instances; the holder of the chat's lease
answers it (`bridge.channels.telegram.shared`). In polling mode only the
holder of the lease `telegram:poll:<source>` polls (`Singleton`); another
instance takes over when it dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from aiohttp import web
from telegram import BotCommand, Message, Update
from telegram.constants import ChatType
from telegram.error import TelegramError
from telegram.ext import AIORateLimiter, Application, ApplicationBuilder, ContextTypes, TypeHandler
from telegram.request import HTTPXRequest

from bridge.channels.common.chat_queue import Taken
from bridge.channels.common.shared import GIVEN_UP, Cluster
from bridge.channels.common.tls import verified
from bridge.channels.telegram.actions import pressed
from bridge.channels.telegram.connect import Connection, PollWatch
from bridge.channels.telegram.files_in import FilesIn, file_base_url
from bridge.channels.telegram.health import Backoff
from bridge.channels.telegram.inbox import UpdateInbox
from bridge.channels.telegram.input import chat_of, message_inbound, to_answer
from bridge.channels.telegram.outbox import OutboxSender
from bridge.channels.telegram.replay import Durable, Outcome, too_old
from bridge.channels.telegram.reply import RESUMES, TelegramReply, Undelivered
from bridge.channels.telegram.send import DeliveryError, Sender, SendFailed, SendPolicy
from bridge.channels.telegram.shared import SharedWork
from bridge.channels.telegram.stream import StreamTiming
from bridge.channels.telegram.typing import LoopTimer, Timer
from bridge.channels.telegram.voice import InboxFor, Speak, voice_attachment
from bridge.channels.telegram.webhook import secret_ok, take_update, webhook_secret
from bridge.core.commands import COMMAND_NAME
from bridge.core.config import ConfigError
from bridge.core.config_sections import TelegramSettings
from bridge.schedule.outbox_parts import PartLog
from bridge.storage.leases import Singleton
from bridge.types.messages import Answer, Attachment, Final, Inbound

log = logging.getLogger(__name__)
ReplyFor = Callable[[Inbound, int, int | None, int | None], TelegramReply]
"""(inbound, chat id, message to quote, message to answer in place) -> its reply"""

ALLOWED_UPDATES = [
    "message",
    "edited_message",
    "channel_post",
    "edited_channel_post",
    "callback_query",  # a press of a reply's button (bridge.channels.telegram.actions)
]


@dataclass(frozen=True, slots=True)
class TelegramOptions:
    poll_timeout_s: float = 10.0
    timing: StreamTiming = field(default_factory=StreamTiming)
    send: SendPolicy = field(default_factory=SendPolicy)
    rate_limiter: bool = True
    concurrent_updates: int = 256
    # Bot API calls in flight at once (the bot's pooled HTTP connections; see the module)
    connections: int = 8
    reconnect: Backoff = field(default_factory=Backoff)  # retries of a failed start
    # python-telegram-bot's poll_interval: a wait after each getUpdates answer; its retries of
    # a failed poll wait 1 s, then 1.5 times longer each (up to 30 s), but start from 1.5
    # times this when it is above 0 (tests: 0.01)
    poll_interval_s: float = 0.0
    stop_grace_s: float = 10.0
    timer: Timer = field(default_factory=LoopTimer)  # when typing and drafts start (tests fire it)


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
        inbox: UpdateInbox | None = None,
        parts: PartLog | None = None,
        cluster: Cluster | None = None,
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
        self._secret = webhook_secret(settings) if self._webhook else ""
        # the library's default request, with the process's one TLS context (`verified`)
        request = HTTPXRequest(
            connection_pool_size=self._opts.connections,
            pool_timeout=self._opts.send.send_timeout_s,  # a busy pool is waited for
            httpx_kwargs={"verify": verified()},
        )
        builder: ApplicationBuilder[Any, Any, Any, Any, Any, Any] = (
            ApplicationBuilder()
            .token(settings.token.get_secret_value())
            .base_url(settings.api_base_url)
            .base_file_url(file_base_url(settings.api_base_url))
            .concurrent_updates(self._opts.concurrent_updates)
            .request(request)
        )
        if self._opts.rate_limiter:
            builder = builder.rate_limiter(AIORateLimiter(max_retries=2))
        token = settings.token.get_secret_value()
        self.connection = Connection(self._connect, self._disconnect, token, self._opts.reconnect)
        self.durable = (
            Durable(
                inbox, self._dispatch, self._drop, settings.answer_max_age_s, resend=self._resend
            )
            if inbox is not None
            else None
        )
        self.shared = (  # instances sharing the bot: the holder of a chat's lease answers it
            SharedWork(
                inbox,
                cluster.leases,
                cluster.ttl_ms,
                self._answer_taken,
                self._give_up,
                unmarked=self.durable.unmarked,
                resend=self._resend_taken,
            )
            if self.durable is not None and inbox is not None and cluster is not None
            else None
        )
        self._poll_lease = (  # polling with instances: only the lease's holder polls
            Singleton(cluster.leases, f"telegram:poll:{inbox.source}", inbox.owner, cluster.ttl_ms)
            if self.shared is not None
            and inbox is not None
            and cluster is not None
            and not self._webhook
            else None
        )
        self._poller: asyncio.Task[None] | None = None
        if self._webhook:  # the bot keeps a getUpdates request of its own, never polled here
            unpolled = HTTPXRequest(connection_pool_size=1, httpx_kwargs={"verify": verified()})
            builder = builder.updater(None).get_updates_request(unpolled)
        else:
            received = (
                self.shared.received_payload
                if self.shared is not None
                else self.durable.received
                if self.durable is not None
                else None
            )
            builder = builder.get_updates_request(PollWatch(self.connection.polled, received))
        self.app: Application = builder.build()  # type: ignore[type-arg]
        self.app.add_handler(TypeHandler(Update, self._on_update))
        self.app.add_error_handler(self._on_error)
        self.sender = Sender(self.app.bot, self._opts.send)
        if send_failed is not None:
            self.sender.failed = send_failed  # every send path: replies, drafts, typing
        self.deliver = OutboxSender(self.sender, parts)  # the outbox's deliver, part by part
        self.undelivered = undelivered
        self.voice_inbox = voice_inbox  # voice notes in (bridge.channels.telegram.voice)
        self.speak = speak  # answers spoken
        self.files_in = files_in  # photos and documents in (None: text only)
        self.timing = self._opts.timing
        self._tasks: set[asyncio.Task[object]] = set()
        self._running = False
        self._stopping = False

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
        if self.shared is not None:  # stored updates, per chat under its lease
            self.shared.start()
        elif self.durable is not None:  # what an earlier process left, before anything new
            await self.durable.replay(self.app.bot, self._spawn)
        await self._register_commands()
        if self._webhook:
            await self.app.bot.set_webhook(
                self._settings.webhook_url or "",
                secret_token=self._secret,
                allowed_updates=ALLOWED_UPDATES,
            )
        elif self._poll_lease is not None:
            if self._poller is None or self._poller.done():
                self._poller = asyncio.create_task(self._poll_lease.run(self._poll_held))
        else:
            await self._start_polling()
        self._running = True
        if self.durable is not None:  # what the replay took may go out now
            self.durable.up.set()
        return f"@{self.app.bot.username}, {self._settings.mode}"

    async def _start_polling(self) -> None:
        assert self.app.updater is not None
        await self.app.updater.start_polling(
            timeout=int(self._opts.poll_timeout_s),
            poll_interval=self._opts.poll_interval_s,
            allowed_updates=ALLOWED_UPDATES,
            error_callback=self.connection.polling_failed,
        )

    async def _poll_held(self) -> None:
        """Poll while this instance holds the poll lease (cancelled when it is lost)."""
        log.info("telegram: this instance polls for the bot (it holds the poll lease)")
        await self._start_polling()
        try:
            await asyncio.Event().wait()
        finally:
            if self.app.updater is not None and self.app.updater.running:
                with contextlib.suppress(TelegramError):
                    await self.app.updater.stop()

    async def _disconnect(self) -> None:
        self._running = False
        if self._poller is not None:  # the next connect polls again while it holds the lease
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
            self._poller = None
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
        if self._poller is not None:  # polling stops, then another instance may poll
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
            if self._poll_lease is not None:
                await self._poll_lease.release()
        await self.connection.stop()
        self._running = False
        if self.app.updater is not None and self.app.updater.running:
            with contextlib.suppress(TelegramError):
                await self.app.updater.stop()
        self._stopping = True  # updates not begun stay in the inbox for the next start
        if self.shared is not None:  # turns finish, THEN the chats' leases go
            await self.shared.stop(self._opts.stop_grace_s)
        pending = {t for t in self._tasks if not t.done()}
        if pending:
            _, pending = await asyncio.wait(pending, timeout=self._opts.stop_grace_s)
        if pending and self.durable is not None:  # the inbox answers them after the restart
            for task in pending:
                task.cancel()
            await asyncio.wait(pending, timeout=self._opts.stop_grace_s)
        if self.durable is not None:  # marks that failed while the database was away
            await self.durable.flush()
        if self.app.running:
            await self.app.stop()
        with contextlib.suppress(TelegramError):
            await self.app.shutdown()

    # -- input -------------------------------------------------------------------------------

    async def _on_webhook(self, request: web.Request) -> web.Response:
        if not self._running and secret_ok(request, self._secret):
            return web.Response(status=503)
        if self.shared is not None:
            return await take_update(
                request, self._secret, self.app.bot, self.shared.received, None
            )
        store = self.durable.inbox.store if self.durable is not None else None
        return await take_update(
            request, self._secret, self.app.bot, store, self.app.update_queue.put
        )

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """A background task the channel waits for when it stops."""
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _on_update(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            if not isinstance(update, Update):
                return
            if self.shared is not None:
                return  # stored by the poll: the holder of the chat's lease answers it
            if self.durable is not None:
                if self._stopping:
                    return  # stored: answered after the restart
                await self.durable.fresh(update, chat_of(update))
            else:
                await self._dispatch(update, Outcome())
        finally:
            if task is not None:
                self._tasks.discard(task)

    def _reply(
        self,
        chat_id: int,
        reply_to: int | None,
        inbound: Inbound,
        in_place: int | None = None,
        outcome: Outcome | None = None,
    ) -> TelegramReply:
        """`outcome`: the durable inbox's, for the reply to an update's message (the
        messages an earlier process showed its draft in, and where to record its own)."""
        resumed, drafted = (outcome.shown, outcome.drafted) if outcome else ((), None)
        reply = TelegramReply(
            self.sender,
            self.timing,
            self.undelivered,
            chat_id,
            reply_to,
            inbound,
            self.app.bot,
            self.speak,
            timer=self._opts.timer,
            in_place=in_place,
            resumed=resumed if in_place is None else (),
            on_draft=drafted,
        )
        if self.durable is not None:
            reply.abort_notice = RESUMES
        return reply

    async def _dispatch(self, update: Update, outcome: Outcome) -> None:
        """Answer one update; `outcome.settle()` once its answer was delivered or kept
        (or nothing was to be sent). A reply whose text was all there was to send is
        settled here, once the turn ended (also when it ends by an error or a
        cancellation after the text went out), so the chat's lock never waits for
        the inbox's write; one followed by files or a voice message settled before
        they went (`TelegramReply.on_settled`)."""
        replies: list[TelegramReply] = []

        def reply_for(
            inbound: Inbound, chat_id: int, reply_to: int | None, in_place: int | None = None
        ) -> TelegramReply:
            first = outcome if not replies else None  # the update's own answer
            reply = self._reply(chat_id, reply_to, inbound, in_place, first)
            reply.on_settled = outcome.settle  # its text delivered or kept: answered
            replies.append(reply)
            return reply

        try:
            await self._read(update, reply_for)
        finally:
            if any(r.settled for r in replies):  # delivered or kept: answered, whatever came after
                await outcome.settle()
        if all(r.settled or not r.called for r in replies):  # incl. nothing to send
            await outcome.settle()

    async def _read(self, update: Update, reply_for: ReplyFor) -> None:
        if update.callback_query is not None:  # a one-tap action: its command, as if typed
            await pressed(
                update.callback_query,
                self.app.bot.username,
                self.allowed_groups,
                self._answer,
                lambda inbound, chat_id, in_place: reply_for(inbound, chat_id, None, in_place),
            )
            return
        msg = to_answer(update, self.allowed_groups, self.app.bot.id, self.app.bot.username)
        if msg is None or msg.from_user is None:
            return
        private = msg.chat.type == ChatType.PRIVATE
        heard = await self._voice(msg, str(msg.from_user.id))
        inbound = message_inbound(msg, self.app.bot.username, heard)
        if self.files_in is not None:  # a photo or document: fetched into the tenant's inbox
            inbound = await self.files_in.receive(self.app.bot, msg, inbound)
        reply = reply_for(inbound, msg.chat.id, None if private else msg.message_id, None)
        try:
            await self._answer(inbound, reply)
        except BaseException:
            await reply.abort()
            raise

    async def _answer_taken(self, taken: Taken) -> None:
        """A stored update this instance took under the chat's lease."""
        assert self.durable is not None
        try:
            update = Update.de_json(taken.payload, self.app.bot)
        except (ValueError, TypeError, KeyError):
            log.warning("telegram: stored update %d is unreadable; dropped", taken.update_id)
            await self.durable.inbox.done(taken.update_id, dropped=True)
            return
        await self.durable.answer(update, taken.shown)

    async def _resend_taken(self, taken: Taken, text: str) -> bool:
        """A stored update a dead instance answered (its turn stored): the stored answer
        into the outbox (`_resend`)."""
        try:
            update = Update.de_json(taken.payload, self.app.bot)
        except (ValueError, TypeError, KeyError):
            return False
        return await self._resend(update, text, taken.shown)

    async def _give_up(self, taken: Taken) -> None:
        """An update that was taken too often without an answer: the person is told once."""
        try:
            msg = Update.de_json(taken.payload, self.app.bot).message
        except (ValueError, TypeError, KeyError):
            return
        if msg is None or msg.from_user is None or self.undelivered is None:
            return
        await self._unkey(msg.chat.id, taken.shown)
        inbound = message_inbound(msg, self.app.bot.username)
        await self.undelivered(inbound, GIVEN_UP, f"failed:{msg.message_id}")

    async def _drop(self, update: Update, age_s: float, shown: tuple[int, ...] = ()) -> None:
        """A message too old to answer: the person is told, through the outbox."""
        msg = update.message
        if msg is None or msg.from_user is None or self.undelivered is None:
            return
        await self._unkey(msg.chat.id, shown)
        inbound = message_inbound(msg, self.app.bot.username)
        key = f"dropped:{msg.message_id}"
        await self.undelivered(inbound, too_old(update, age_s), key)

    async def _resend(self, update: Update, text: str, shown: tuple[int, ...]) -> bool:
        """The answer an earlier process stored for an update it may not have delivered
        (killed before its done mark), sent again in the chat's order as an answer is (the
        messages a draft of it was shown in edited into it; the outbox when it fails);
        whether it was delivered or kept (a button press's answer is not resent: answered
        again)."""
        msg = update.message
        if msg is None or msg.from_user is None:
            return False
        private = msg.chat.type == ChatType.PRIVATE
        inbound = message_inbound(msg, self.app.bot.username)
        outcome = Outcome(shown=shown)
        reply = self._reply(
            msg.chat.id, None if private else msg.message_id, inbound, None, outcome
        )
        await reply.send(Final(text, "answer"))
        return reply.settled

    async def _unkey(self, chat_id: int, shown: tuple[int, ...]) -> None:
        """The draft an earlier process (killed) showed of an answer that will not come
        (too old, given up): its Stop button taken off where Telegram lets it. Its half
        text stays, the line that says why follows it; a button left says nothing runs
        when pressed."""
        for message_id in shown:
            try:
                await self.sender.markup(chat_id, message_id, None)
            except DeliveryError as exc:
                log.info("telegram: a draft's Stop button in chat %s stays: %s", chat_id, exc)

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
