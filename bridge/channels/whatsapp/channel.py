"""The WhatsApp channel: Meta's webhook on the web server, answers through the Graph API.

`mount(app)` adds `/whatsapp/webhook` to the web channel's aiohttp app.
`GET` is Meta's subscription check (`signature.challenge`: the challenge
when `hub.mode=subscribe` and `hub.verify_token` match, else 403). `POST`
reads the raw body, at most `MAX_BODY` (3 MiB, the most Meta sends in one
webhook; deliveries are small: a longer one, by its `Content-Length` or as
it streams, is 413 before anything is parsed), within `BODY_DEADLINE_S`
(408 after), and the bodies being read at once, signed or not, hold at
most `BODY_BUDGET` bytes together, one client's (an IPv4 address, an IPv6
/64) at most `MAX_BODY` of them, and the budget's last MiB is kept for
small bodies (a declared length of at most 64 KiB, as Meta's deliveries
are), which have a share of their own, 64 KiB per client
(`budget.BodyBudget`): one that would pass a share is 503 with
`Retry-After` (Meta delivers it again), so unsigned bodies cannot fill
the memory, nor can one address keep Meta out. While a body is read (not
yet signed) its connection gives way to newcomers like an idle one
(`conn_table.unproven`: bodies that never come keep no one out). A client
gone mid-body, or cut by the listener, ends its request quietly. Then it checks
`X-Hub-Signature-256` against the body in constant time (401 without a
usable header, 403 when wrong: nothing else happens), and only then parses
it (`payload.parse`). It answers 200 as soon as the delivery is taken:
Meta wants a quick answer and delivers again otherwise. Status updates are
recorded (`store.status`; one that cannot be is logged); a message older
than `max_age_ms` by its own `timestamp` (the seen-id window, a week, less
a day; one without a timestamp counts as old) is refused (counted `stale`,
never answered), so a captured body replayed after its id left the window
is never answered again; each message id is taken once
(`store.first_time`, durable: a duplicate or a retry is never answered
twice; when the database cannot record it the webhook answers 503, logged
by the error's kind only, and Meta delivers it again) and the message is
handled in a task of its own, one chat's messages in the order they came
(deliveries are taken one at a time, `_taking`, as the store's statements
are awaited). Kinds roost does not read, bad items and group messages are
counted (`ignored`), never answered.

A message becomes an `Inbound` (identity and chat: the sender's wa_id; its
`msg_id`: `store.key(wamid)`, no phone number in it); a reply button's or a
list row's id is the text (an offer's command, as if typed). A sender that
resolves to a tenant is a known person: their 24-hour window is recorded
(`store.wrote`, and `woke` makes their waiting outbox entries due), and the
message's image, document or voice note is fetched into their inbox
(`media.MediaFetcher`). Who may talk, `/pair`, the one refusal to a
stranger and the per-chat order are the core's, as on every channel.

Instances sharing one number (`inbox` and `cluster` given: `[database] url`
PostgreSQL) do not answer the message they receive: each delivery's new
messages are stored first (`WhatsAppInbox.store`, one transaction, the
seen-id and the row; 503 when it cannot be) and every instance is woken
(NOTIFY); the holder of the person's lease answers them, one at a time,
oldest first (`bridge.channels.common.shared.SharedWork`), and marks each
done the moment its answer's text was delivered or kept in the outbox
(`WhatsAppReply`'s `settled`, before files or a voice message), or when its
handling ended otherwise; cancelled by a stop before that, it stays open
for another instance.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from aiohttp import ClientPayloadError, web

from bridge.channels.common.chat_queue import Taken
from bridge.channels.common.shared import GIVEN_UP, Cluster, SharedWork
from bridge.channels.whatsapp.budget import BODY_BUDGET as BODY_BUDGET  # named here too
from bridge.channels.whatsapp.budget import MAX_BODY as MAX_BODY
from bridge.channels.whatsapp.budget import BodyBudget, is_small
from bridge.channels.whatsapp.client import GraphClient
from bridge.channels.whatsapp.inbox import TOPIC, WhatsAppInbox, incoming_of
from bridge.channels.whatsapp.media import MediaFetcher, Receiving
from bridge.channels.whatsapp.payload import LEFT_OUT, Delivery, Incoming, parse
from bridge.channels.whatsapp.reply import Speak, Undelivered, WhatsAppReply
from bridge.channels.whatsapp.send import Outgoing
from bridge.channels.whatsapp.signature import HEADER, challenge, check
from bridge.channels.whatsapp.store import DAY_MS, WhatsAppStore, key
from bridge.storage.errors import StorageError
from bridge.types.clients import client_key
from bridge.types.conn_table import unproven
from bridge.types.messages import Answer, Final, Inbound

log = logging.getLogger("bridge.channels.whatsapp")
PATH = "/whatsapp/webhook"
BODY_DEADLINE_S = 10.0  # to read one body, from its headers on
RETRY_AFTER_S = 5
CHUNK = 64 * 1024


class _TooLarge(Exception):
    pass


class _Busy(Exception):
    pass


@dataclass(frozen=True, slots=True)
class Secrets:
    app_secret: bytes
    verify_token: bytes
    phone_number_id: str


class WhatsAppChannel:
    name = "whatsapp"

    def __init__(
        self,
        secrets: Secrets,
        answer: Answer,
        client: GraphClient,
        store: WhatsAppStore,
        *,
        media_hosts: tuple[str, ...] = (),
        receiving: Receiving | None = None,
        undelivered: Undelivered | None = None,
        speak: Speak | None = None,
        woke: Callable[[str, str], Awaitable[None]] | None = None,
        ignored: Callable[[str, int], None] = lambda kind, n: None,
        clock: Callable[[], float] = time.time,
        stop_grace_s: float = 10.0,
        inbox: WhatsAppInbox | None = None,
        cluster: Cluster | None = None,
    ) -> None:
        self._secrets, self._answer = secrets, answer
        self.client, self.store = client, store
        self.out = Outgoing(client)
        self.fetcher = MediaFetcher(client, media_hosts)
        self._receiving, self._undelivered, self._speak = receiving, undelivered, speak
        self._woke, self._ignored_hook, self._clock = woke, ignored, clock
        self._grace = stop_grace_s
        self._tasks: set[asyncio.Task[None]] = set()
        self._last: dict[str, asyncio.Task[None]] = {}  # per chat: its newest message's task
        self._taking = asyncio.Lock()  # deliveries taken in the order they came
        self._running = False
        self.ignored: Counter[str] = Counter()
        self._warned: set[str] = set()  # kinds of items left out, logged once each
        self.duplicates = 0
        self._unmarked: set[int] = set()  # answered, the done mark not written
        self.budget, self.body_deadline_s = BodyBudget(), BODY_DEADLINE_S
        self.busy = 0  # bodies refused as the budget (or their client's share) was full
        self._busy_logged = -60.0
        # a message older than this (its timestamp) is never answered: its id may have
        # left the seen window (`store.keep_seen_ms`), so it could be a replay
        keep = store.keep_seen_ms
        self.max_age_ms = keep - min(DAY_MS, keep // 2)
        self.shared = (  # instances sharing the number: the holder of a person's lease answers
            SharedWork(
                inbox,
                cluster.leases,
                cluster.ttl_ms,
                self._answer_taken,
                self._give_up,
                topic=TOPIC,
                unmarked=self._unmarked,
                resend=self._resend,
            )
            if inbox is not None and cluster is not None
            else None
        )
        self.inbox = inbox if self.shared is not None else None

    @property
    def reading(self) -> int:
        """Bytes of webhook bodies being read now (at most `BODY_BUDGET`)."""
        return self.budget.reading

    def mount(self, app: web.Application) -> None:
        """Add the webhook route to the web channel's app (before it starts)."""
        app.router.add_get(PATH, self._verify)
        app.router.add_post(PATH, self._webhook)

    async def start(self) -> None:
        self._running = True
        if self.shared is not None:
            self.shared.start()

    async def stop(self) -> None:
        self._running = False  # from now on a webhook gets 503: Meta delivers it again later
        if self.shared is not None:  # turns finish, THEN the people's leases go
            await self.shared.stop(self._grace)
        pending = {t for t in self._tasks if not t.done()}
        if pending:
            await asyncio.wait(pending, timeout=self._grace)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await self.client.aclose()

    async def idle(self) -> None:
        """Until every message taken so far has been handled (tests, benchmarks)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- the webhook ------------------------------------------------------------------------

    async def _verify(self, request: web.Request) -> web.Response:
        answer = challenge(request.query, self._secrets.verify_token)
        if answer is None:
            return web.Response(status=403)
        return web.Response(text=answer, content_type="text/plain")

    async def _webhook(self, request: web.Request) -> web.Response:
        declared = request.content_length
        if declared is not None and declared > MAX_BODY:
            return web.Response(status=413)
        client, small = client_key(request.remote), is_small(declared, self.budget.small)
        if declared is not None and not self.budget.fits(client, small, declared):
            return self._busy()
        try:
            # unsigned until read: its connection gives way to newcomers meanwhile
            with unproven():
                async with asyncio.timeout(self.body_deadline_s):
                    body = await self._read_capped(request, MAX_BODY, client, small)
        except _TooLarge:
            return web.Response(status=413)
        except _Busy:
            return self._busy()
        except TimeoutError:
            return web.Response(status=408)
        except (ConnectionResetError, ClientPayloadError):  # the client went away mid-body
            return web.Response(status=400)
        except RuntimeError:  # aiohttp's "Connection closed.": cut before its body was read
            if request.transport is not None:
                raise
            return web.Response(status=400)
        verdict = check(self._secrets.app_secret, body, request.headers.get(HEADER))
        if verdict != "ok":
            log.warning("whatsapp: a webhook with a %s signature was refused", verdict)
            return web.Response(status=401 if verdict == "missing" else 403)
        if not self._running:
            return web.Response(status=503)
        delivery = parse(body, self._secrets.phone_number_id)
        if delivery is None:
            self._ignore("malformed", 1)  # signed by Meta: sending it again would not help
            return web.Response(text="ok")
        try:
            async with self._taking:
                await self._take(delivery)
        except StorageError as exc:  # not recorded, not answered: Meta delivers it again
            # the error's kind only: a driver's message may quote the values (a wamid)
            log.error("whatsapp: a webhook could not be taken (%s); answered 503", _kind(exc))
            return web.Response(status=503)
        return web.Response(text="ok")

    def _busy(self) -> web.Response:
        self.busy += 1
        now = time.monotonic()
        if now - self._busy_logged >= 60.0:  # a flood is logged once a minute, not per request
            self._busy_logged = now
            log.warning(
                "whatsapp: webhook bodies being read fill the budget (%d bytes, %d per client);"
                " answered 503 (%d so far)",
                self.budget.total,
                self.budget.per_client,
                self.busy,
            )
        return web.Response(status=503, headers={"Retry-After": str(RETRY_AFTER_S)})

    async def _read_capped(
        self, request: web.Request, limit: int, client: str, small: bool
    ) -> bytes:
        """The raw body; `_TooLarge` as soon as it passes `limit`, `_Busy` when it would
        not fit in the budget (or its client's share of it)."""
        parts: list[bytes] = []
        size = 0
        try:
            async for chunk in request.content.iter_chunked(CHUNK):
                size += len(chunk)
                if size > limit:
                    raise _TooLarge
                if not self.budget.take(client, small, len(chunk)):
                    raise _Busy
                parts.append(chunk)
            return b"".join(parts)
        finally:
            self.budget.give(client, small, sum(len(p) for p in parts))

    async def _take(self, delivery: Delivery) -> None:
        for kind, n in (delivery.ignored or Counter()).items():
            self._ignore(kind, n)
        now_ms = int(self._clock() * 1000)
        oldest_ms = now_ms - self.max_age_ms
        fresh = tuple(m for m in delivery.messages if m.timestamp * 1000 >= oldest_ms)
        if len(fresh) < len(delivery.messages):  # perhaps a replay: its id may be forgotten
            self._ignore("stale", len(delivery.messages) - len(fresh))
            delivery = replace(delivery, messages=fresh)
        for status in delivery.statuses:
            try:
                row = await self.store.status(status.wamid, status.status, status.error, now_ms)
            except StorageError as exc:
                log.warning("whatsapp: a status could not be recorded: %s", exc)
                continue
            if row is not None and status.status == "failed":
                log.warning(
                    "whatsapp: a message (outbox entry %s) failed: error %s",
                    row.entry,
                    status.error,
                )
        if self.inbox is not None and self.shared is not None:
            new = await self.inbox.store(delivery.messages)  # StorageError: 503
            self.duplicates += len(delivery.messages) - new
            if new:
                await self.shared.wake()
                if await self.store.counted(new, now_ms):  # and the answered rows, as often
                    await self.inbox.prune()
            return
        for msg in delivery.messages:
            if not await self.store.first_time(msg.wamid, now_ms):
                self.duplicates += 1
                continue
            self._spawn(msg)

    def _ignore(self, kind: str, n: int) -> None:
        self.ignored[kind] += n
        self._ignored_hook(kind, n)
        if kind in LEFT_OUT and kind not in self._warned:  # the kind only: no content
            self._warned.add(kind)
            log.warning("whatsapp: a delivery's item was left out (%s); logged once", kind)
        log.debug("whatsapp: ignored %d update(s) of kind %s", n, kind)

    def _spawn(self, msg: Incoming) -> None:
        before = self._last.get(msg.sender)
        task = asyncio.create_task(self._after(before, msg))
        self._last[msg.sender] = task
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._done(msg.sender, done))

    def _done(self, chat: str, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if self._last.get(chat) is task:
            del self._last[chat]
        if not task.cancelled() and task.exception() is not None:
            log.error("whatsapp: handling a message failed", exc_info=task.exception())

    async def _after(self, before: asyncio.Task[None] | None, msg: Incoming) -> None:
        if before is not None:
            await asyncio.gather(before, return_exceptions=True)  # the chat's order
        await self._handle(msg)

    # -- a stored message, under its person's lease (instances sharing the number) -----------

    async def _answer_taken(self, taken: Taken) -> None:
        """Answer a stored message this instance took; marked done the moment its answer's
        text was delivered or kept in the outbox (before files or a voice message follow),
        or when its handling ended otherwise (a message that gets no answer, or a failure a
        retry would not fix); cancelled before that, it stays open."""
        try:
            msg = incoming_of(taken.payload)
        except (TypeError, KeyError, ValueError):
            log.warning("whatsapp: stored message %d is unreadable; dropped", taken.update_id)
            await self._mark(taken.update_id, dropped=True)
            return
        marked = False

        async def settle() -> None:  # once: when the text went out or was kept, or at the end
            nonlocal marked
            if not marked:
                marked = True
                await self._mark(taken.update_id)

        try:
            await self._handle(msg, settle)
        finally:
            task = asyncio.current_task()
            if task is None or not task.cancelling():
                await settle()

    async def _mark(self, update_id: int, *, dropped: bool = False) -> None:
        """A failed mark is logged, not raised: the answer went out; the dispatcher writes
        it again before the person's next message (`unmarked`)."""
        assert self.inbox is not None
        try:
            await self.inbox.done(update_id, dropped=dropped)
        except StorageError as exc:
            log.error("whatsapp: message %d could not be marked answered: %s", update_id, exc)
            self._unmarked.add(update_id)

    async def _resend(self, taken: Taken, text: str) -> bool:
        """The answer an instance that died stored for a message (its turn ended, the done
        mark not written), sent again in the person's order (its reply: the outbox when it
        fails), not asked of the model again; whether it was delivered or kept."""
        try:
            msg = incoming_of(taken.payload)
        except (TypeError, KeyError, ValueError):
            return False
        kept = False

        async def settled() -> None:
            nonlocal kept
            kept = True

        reply = WhatsAppReply(
            self.out, self._inbound(msg), msg.wamid, undelivered=self._undelivered, settled=settled
        )
        await reply.send(Final(text, "answer"))
        return kept

    async def _give_up(self, taken: Taken) -> None:
        """A message taken too often without an answer: the person is told once."""
        try:
            msg = incoming_of(taken.payload)
        except (TypeError, KeyError, ValueError):
            return
        if self._undelivered is not None:
            await self._undelivered(self._inbound(msg), GIVEN_UP)

    # -- one message --------------------------------------------------------------------------

    def _inbound(self, msg: Incoming) -> Inbound:
        return Inbound(
            "whatsapp",
            msg.sender,
            msg.sender,
            msg.text or "",
            key(msg.wamid),
            is_private=True,
            display_name=msg.name,
            has_text=msg.text is not None,
        )

    async def _handle(
        self, msg: Incoming, settled: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        inbound = self._inbound(msg)
        receiving = self._receiving
        tenant = receiving.tenant_of(inbound) if receiving is not None else None
        if tenant is not None:
            try:
                await self.store.wrote(tenant, msg.sender, int(self._clock() * 1000))
            except StorageError as exc:  # the window stays as it was; the answer goes on
                log.warning("whatsapp: the 24-hour window could not be recorded: %s", exc)
            if self._woke is not None:
                await self._woke(tenant, msg.sender)
            if msg.media is not None and receiving is not None:
                inbox = receiving.inbox_of(tenant)
                att = await self.fetcher.attachment(msg.kind, msg.media, inbox, receiving)
                inbound = replace(inbound, attachments=(att,), has_text=True)
        reply = WhatsAppReply(
            self.out,
            inbound,
            msg.wamid,
            undelivered=self._undelivered,
            speak=self._speak,
            settled=settled,
        )
        await self._answer(inbound, reply)


def _kind(exc: Exception) -> str:
    """A storage error's kind for the log: its SQLSTATE when it has one, else its type."""
    head = str(exc).split(":", 1)[0].strip()
    return head if len(head) == 5 and head.isalnum() else type(exc).__name__
