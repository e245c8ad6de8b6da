"""The Matrix channel: a bot account that syncs, answers, and keeps its place.

`start()` runs the sync loop in a task. The loop long-polls `/sync` from
the stored token (`store.MatrixStore`), after a first sync of the run that
returns at once (what came while roost was down, and `connected`, without
waiting out a quiet account's long-poll); the very first sync of an account
(no token yet) only takes invites: what was said before the bot existed is
history, never answered. Each batch is taken (invites joined or refused,
rooms checked), then its messages to answer and its `next_batch` are
stored in one transaction (`inbox.MatrixInbox`), then the messages are
handed to their chat's queue (one chat's messages in order), each marked
done in the inbox once its answer's text is out (before files and voice) or
it was handled: after a restart nothing is answered twice (a kept message
whose turn the session stored is sent that answer again, under the answer's
own transaction ids, which the homeserver keeps once: `send.answer_txn`),
and what a stopped or killed run left unanswered is answered first
(`_recover`, once the run's first sync answered, before its messages: a
homeserver still away at the start cannot fail their rooms' checks). A
failed sync (the homeserver gone, 5xx, 429) is retried with backoff (the
server's `retry_after_ms` honoured) until it answers again: a lost
homeserver is reconnected, and `connected` says which.
With instances sharing the account (PostgreSQL, `sync_lease`), only the
holder of the lease `matrix:sync:<account>` syncs; the others wait in
standby and one takes over, from the stored token, at a clean stop at once
or `lease_s` after a holder died (what it had taken but not stored is
taken again: at least once in that moment, as after a restart), and
answers what the holder left open; a stopping holder gives the lease up
after its answers under way ended or were cut off.

Rooms: a room listed in `[matrix] allowed_rooms` is a group: the bot joins
when invited, answers only messages that mention it, each person in a
conversation of their own (chat `<room>|<user>`). Any other room is a
direct room with one person (chat: their user id); the bot accepts any
invite from a known person (a room made with encryption off need not be
marked direct) and a direct invite (`is_direct`) from a stranger, leaves a
room that grows past two members or is not private (below), and rejects
any other invite. A stranger may invite the bot to a direct room so they
can `/pair CODE` there; anything else they say (an encrypted message too:
never the `ENCRYPTED` notice) gets the core's one refusal and the bot
leaves the room; later they get silence (the refusal is the core's,
recorded once as on every channel). Strangers' rooms are bounded: one per
stranger (a newer invite: the older room is left), at most
`stranger_rooms` (20) at once (past it their invites are rejected), each
left `stranger_s` (10 minutes) after the join unless its stranger paired.
These bounds are kept in memory: a stranger's room joined before a restart
is left only at their next message.

Private: a direct room is answered (and kept as the person's room for
proactive messages, `store.set_direct`) only while `events.private` holds:
history not `world_readable`, join rule `invite` or `knock`. The sync
filter carries `m.room.history_visibility` and `m.room.join_rules` (state
and timeline), so the join's sync and every later change tell them; an
invite whose `invite_state` already shows a failing value is rejected
unjoined, a room whose told value fails is left at once and forgotten as a
direct room. What is not known (a room not seen since the start) is asked
(`MatrixClient.access`) with the members before the next answer.

Members of a direct room: the sync filter keeps `m.room.member` events, so
a join, invite or leave reaches the channel with the room's `summary`
(joined plus invited, `events.read`); the count is kept per room. A room
whose members changed without a summary (a gap in its timeline), or one
not seen since the start, is asked (`MatrixClient.present`) before the
next answer there; a normal message costs no request. A direct room of
more than two people is left (at once when a sync tells so, else at its
next message) and never answered; one whose count cannot be learned is
not answered (fail closed). The count and the rules are checked again
just before each answer, so a message queued behind a long answer is not
answered to a room that grew or opened meanwhile. Encrypted rooms: roost
holds no Olm/Megolm keys, so an encrypted message is answered, once per
room and run, with `ENCRYPTED` (a plain notice) when its sender is known,
never read.

Link previews: before its first answer in a room the bot makes sure the
room's `org.matrix.room.preview_urls` state says `{"disable": true}`
(`MatrixClient.previews_off`: read first, set only when it does not), so
clients do not have the homeserver fetch a URL the model chose, with no
click. Done once per room and run (the room state itself is the durable
record: after a restart a room costs one read), and again after anyone else
sets that state (a room member turning previews back on: the sync shows it);
a room where the bot may not set state gets one log line, and answering goes on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Collection
from dataclasses import replace

from bridge.channels.common.retry import Backoff
from bridge.channels.matrix.api import MatrixClient, MatrixError
from bridge.channels.matrix.events import (
    ACCESS_KEYS,
    PREVIEWS,
    Access,
    Batch,
    Invite,
    Message,
    exposed,
    private,
    read,
    without_mention,
)
from bridge.channels.matrix.inbox import MAX_TRIES, MatrixInbox
from bridge.channels.matrix.media import MediaFetcher, Receiving
from bridge.channels.matrix.platform import group_chat
from bridge.channels.matrix.reply import MatrixReply, Speak, Undelivered
from bridge.channels.matrix.send import Outgoing
from bridge.channels.matrix.store import MatrixStore
from bridge.storage.errors import StorageError
from bridge.storage.leases import Singleton
from bridge.types.messages import Answer, Final, Inbound

log = logging.getLogger("bridge.channels.matrix")
ENCRYPTED = (
    "🔒 This room is end-to-end encrypted, and roost cannot read encrypted messages "
    "(it has no encryption keys). Please talk to me in a direct room without encryption."
)
NOT_HERE = "roost answers only in direct rooms and in the rooms its operator allows."
NOT_PRIVATE = (
    "roost answers only in private rooms: this room's history is world-readable, "
    "or people can join it without an invitation."
)
STRANGER_S = 600.0  # a stranger's room where nothing was paired within this is left
STRANGER_ROOMS = 20  # strangers' rooms joined at once; past it, their invites are rejected
FILTER = json.dumps(
    {
        "presence": {"types": []},
        "account_data": {"types": []},
        "room": {
            "timeline": {
                "limit": 100,
                "types": [
                    *("m.room.message", "m.room.encrypted", "m.room.member", PREVIEWS),
                    *ACCESS_KEYS,
                ],
            },
            "state": {"types": [*ACCESS_KEYS, PREVIEWS], "lazy_load_members": True},
            "ephemeral": {"types": []},
            "account_data": {"types": []},
        },
    },
    separators=(",", ":"),
)
RECONNECT = Backoff(first_s=0.5, max_s=30.0, attempts=1 << 30, longest_s=300.0)


class MatrixChannel:
    name = "matrix"

    def __init__(
        self,
        client: MatrixClient,
        store: MatrixStore,
        answer: Answer,
        me: str,
        *,
        allowed_rooms: Collection[str] = (),
        receiving: Receiving | None = None,
        undelivered: Undelivered | None = None,
        speak: Speak | None = None,
        every_s: float = 1.5,
        poll_ms: int = 30_000,
        reconnect: Backoff = RECONNECT,
        ignored: Callable[[str, int], None] = lambda kind, n: None,
        clock: Callable[[], float] = time.time,
        stop_grace_s: float = 10.0,
        sync_lease: Singleton | None = None,
        inbox: MatrixInbox | None = None,
        stranger_s: float = STRANGER_S,
        stranger_rooms: int = STRANGER_ROOMS,
    ) -> None:
        self.client, self.store, self._answer, self.me = client, store, answer, me
        self.allowed_rooms = frozenset(allowed_rooms)
        self.out = Outgoing(client)
        self.fetcher = MediaFetcher(client)
        self._receiving, self._undelivered, self._speak = receiving, undelivered, speak
        self._every_s, self._poll_ms, self._reconnect = every_s, poll_ms, reconnect
        self._ignored_hook, self._clock = ignored, clock
        self.stop_grace_s = stop_grace_s  # a stop waits this long for answers under way
        self._lease = sync_lease  # instances: only its holder syncs
        self.inbox = inbox  # the messages taken, kept until handled (None: in memory only)
        self._loop: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._last: dict[str, asyncio.Task[None]] = {}  # per chat: its newest message's task
        self._told_encrypted: set[str] = set()
        self._no_previews: set[str] = set()  # rooms whose link previews are off (or told)
        self._members: dict[str, int] = {}  # room -> joined + invited, while known
        self._access: dict[str, Access] = {}  # room -> history visibility, join rule, as known
        self._gone: dict[str, str] = {}  # direct rooms left: room -> why (a counter's name)
        self._strangers: dict[str, str] = {}  # a stranger's room -> the stranger who invited
        self._timers: dict[str, asyncio.Task[None]] = {}  # a stranger's room -> its timeout
        self.stranger_s, self.stranger_rooms = stranger_s, stranger_rooms
        self._news: Counter[str] = Counter()  # room -> syncs that changed what is known
        self.connected = False
        self.synced = asyncio.Event()  # set after each stored batch (tests, benchmarks)
        self.batches = 0
        self.ignored: Counter[str] = Counter()

    async def start(self) -> None:
        work = self._run() if self._lease is None else self._lease.run(self._run)
        self._loop = asyncio.create_task(work, name="matrix sync")
        self._loop.add_done_callback(_report)

    async def stop(self) -> None:
        if self._loop is not None:
            self._loop.cancel()
            await asyncio.gather(self._loop, return_exceptions=True)
        timers = list(self._timers.values())
        self._timers.clear()
        for timer in timers:
            timer.cancel()
        await asyncio.gather(*timers, return_exceptions=True)
        pending = {t for t in self._tasks if not t.done()}
        if pending:
            await asyncio.wait(pending, timeout=self.stop_grace_s)
        for task in pending:
            task.cancel()  # its message stays in the inbox: the next start answers it
        await asyncio.gather(*pending, return_exceptions=True)
        if self.inbox is not None:  # marks that failed while the database was away
            try:
                await self.inbox.flush()
            except StorageError as exc:
                log.error("matrix: %d handled message(s) could not be marked: %s",
                          self.inbox.unwritten, exc)  # fmt: skip
        if self._lease is not None:
            # another instance syncs at once, and takes over what this one left unanswered
            await self._lease.release()
        await self.client.aclose()

    async def idle(self) -> None:
        """Until every message taken so far has been handled (tests, benchmarks)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def status_line(self) -> str:
        if self._lease is not None and not self._lease.held:
            return f"matrix {self.me} (standby: another instance syncs)"
        state = "connected" if self.connected else "reconnecting" if self.batches else "connecting"
        return f"matrix {self.me} ({state})"

    # -- the sync loop -------------------------------------------------------------------------

    async def _token(self) -> str | None:
        """The stored sync token; the database away at start is waited out (backoff)."""
        failures = 0
        while True:
            try:
                return await self.store.next_batch()
            except StorageError as exc:
                failures += 1
                wait = self._reconnect.delay(failures, None)
                log.warning("matrix: the sync token could not be read (%s); again in %.1f s",
                            exc, wait)  # fmt: skip
                await asyncio.sleep(wait)

    async def _stored(self, what: str, write: Awaitable[None]) -> None:
        """A write of the store whose failure is told, not raised: the sync goes on (a
        token not saved means a restart takes the batch again)."""
        try:
            await write
        except StorageError as exc:
            log.error("matrix: %s could not be stored: %s", what, exc)

    async def _run(self) -> None:
        since = await self._token()
        kept = self.inbox is not None  # what earlier runs left: answered after a sync answered
        failures = 0
        caught_up = False  # the run's first sync returns at once: connected, what is pending
        while True:
            try:
                wait_ms = self._poll_ms if since and caught_up else 0
                sync = await self.client.sync(since, wait_ms, FILTER)
            except MatrixError as exc:
                failures += 1
                self.connected = False
                asked = exc.retry_after_ms / 1000 if exc.retry_after_ms is not None else None
                wait = self._reconnect.delay(failures, asked)
                log.warning("matrix: sync failed (%s); trying again in %.1f s", exc, wait)
                await asyncio.sleep(wait)
                continue
            failures, self.connected = 0, True
            batch = read(sync, self.me)
            if batch is None:
                self._ignore("malformed sync", 1)
                await asyncio.sleep(self._reconnect.first_s)
                continue
            await self._take(batch, history=since is None, recover=kept)
            since, caught_up, kept = batch.next_batch, True, False
            self.batches += 1
            self.synced.set()

    async def _recover(self) -> None:
        """Answer what an earlier process took and left unanswered (killed, or stopped
        before it got to it), oldest first, each chat in its order. Called once a sync
        answered (the first of the run), before that batch's messages: each kept row's
        room is checked again, and a homeserver still away at the start (both restarted
        at once) would fail the check, which drops the message for good."""
        if self.inbox is None:
            return
        try:
            kept = await self.inbox.recover()
        except StorageError as exc:
            log.error("matrix: messages left unanswered could not be read: %s", exc)
            return
        if kept:
            log.info("matrix: %d message(s) an earlier run left unanswered", len(kept))
        for row in kept:
            if row.message is None:  # not a message this version reads
                await self._mark(row.update_id, dropped=True)
            elif row.tries >= MAX_TRIES:  # it killed or outlived each run that began it
                log.error("matrix: message %d was begun %d times without an answer; given up",
                          row.update_id, row.tries)  # fmt: skip
                await self._mark(row.update_id, dropped=True)
            elif (routed := await self._route(row.message)) is None:
                await self._mark(row.update_id)
            else:
                stored = await self._stored_answer(routed[0], row.message.event_id)
                self._spawn(*routed, row.message, row.update_id, stored, kept=True)
        try:  # after the rows this run took over are on their way (else they would wait
            await self.inbox.prune()  # for the next start: they are this run's now)
        except StorageError as exc:
            log.warning("matrix: old inbox rows could not be pruned: %s", exc)

    async def _stored_answer(self, chat: str, event_id: str) -> str | None:
        """The answer the session stored for a kept message (the process that took it
        died between the turn's end and the done mark), or None: then it is answered."""
        if self.inbox is None:
            return None
        try:
            return await self.inbox.stored_answer(chat, event_id)
        except StorageError as exc:
            log.warning("matrix: a kept message's stored turn could not be read: %s", exc)
            return None

    async def _mark(self, update_id: int, *, dropped: bool = False) -> None:
        if self.inbox is None:
            return
        try:
            await self.inbox.done(update_id, dropped=dropped)
        except StorageError as exc:  # the row stays open: the next start answers it again
            log.error("matrix: a handled message could not be marked: %s", exc)

    async def _take(self, batch: Batch, *, history: bool, recover: bool = False) -> None:
        """Act on the batch, then (`recover`: the run's first) answer what earlier runs
        left, then store its sync token with the messages to answer (one transaction),
        then hand those to their chats' queues (after the kept ones: each chat's order)."""
        routed = await self._taken(batch, history=history)
        if recover:
            await self._recover()
        ids: list[int | None] = [None] * len(routed)
        token, kept = batch.next_batch, False
        if self.inbox is not None:
            try:
                ids = list(await self.inbox.take([(c, m) for c, _, m in routed], token))
                kept = True
            except StorageError as exc:  # answered all the same, but not kept for a restart
                log.error("matrix: the messages of a sync could not be stored: %s", exc)
        if not kept:  # the token alone, if it can be
            now_ms = int(self._clock() * 1000)
            await self._stored("the sync token", self.store.save_batch(token, now_ms))
        for (chat, inbound, msg), update_id in zip(routed, ids, strict=True):
            self._spawn(chat, inbound, msg, update_id)

    async def _taken(self, batch: Batch, *, history: bool) -> list[tuple[str, Inbound, Message]]:
        for kind, n in batch.skipped.items():
            self._ignore(kind, n)
        for room_id in batch.left:
            self._forget(room_id)
            self._access.pop(room_id, None)
            self._gone.pop(room_id, None)
            self._unstranger(room_id)
            await self._stored("a room left", self.store.forget_room(room_id))
        for room_id in batch.changed:
            self._forget(room_id)  # stale, unless the summary says anew
        for room_id, count in batch.members.items():
            self._members[room_id] = count
            self._news[room_id] += 1
        self._no_previews -= batch.previews  # someone set them again: checked before answering
        for room_id, told in batch.access.items():
            self._access.setdefault(room_id, {}).update(told)
            self._news[room_id] += 1
        for room_id, count in batch.members.items():
            if count > 2 and room_id not in self.allowed_rooms and room_id not in self._gone:
                await self._leave_crowded(room_id, count)
        for room_id in batch.access:
            if room_id in self.allowed_rooms or room_id in self._gone:
                continue
            if exposed(self._access[room_id]):
                await self._leave_exposed(room_id)
        for invite in batch.invites:
            await self._invited(invite)
        if history:  # the account's first sync: nothing said before is answered
            self._ignore("history", len(batch.messages))
            return []
        routed = []
        for message in batch.messages:
            to = await self._route(message)
            if to is not None:
                routed.append((*to, message))
        return routed

    def _ignore(self, kind: str, n: int) -> None:
        if n:
            self.ignored[kind] += n
            self._ignored_hook(kind, n)

    # -- invites and rooms -----------------------------------------------------------------

    async def _invited(self, invite: Invite) -> None:
        room_id = invite.room_id
        if room_id in self.allowed_rooms:
            await self._join(room_id)
        elif exposed(invite.access):
            await self._reject(room_id, "a room that is not private")
        elif self._tenant_of(invite.inviter) is not None:
            await self._join(room_id)
        elif invite.direct:
            await self._stranger_invite(invite)
        else:
            await self._reject(room_id, "a room that is not allowed")

    async def _join(self, room_id: str) -> bool:
        self._forget(room_id)  # learned again once joined
        self._access.pop(room_id, None)
        self._gone.pop(room_id, None)
        return await self._call(self.client.join(room_id), "join")

    async def _reject(self, room_id: str, what: str) -> None:
        self._ignore("invite refused", 1)
        log.info("matrix: an invite to %s was refused", what)
        await self._call(self.client.leave(room_id), "reject")

    async def _stranger_invite(self, invite: Invite) -> None:
        """A stranger's direct invite (they may want to `/pair`): one room per stranger
        (the newest; an older one is left), at most `stranger_rooms` at once (past it
        their invites are rejected), each left after `stranger_s` unless paired."""
        for room_id, inviter in list(self._strangers.items()):
            if inviter == invite.inviter and room_id != invite.room_id:
                await self._leave(room_id, "stranger room", "")
        if invite.room_id not in self._strangers and len(self._strangers) >= self.stranger_rooms:
            await self._reject(invite.room_id, "a stranger's room past the limit")
            return
        self._unstranger(invite.room_id)
        if not await self._join(invite.room_id):
            return
        self._strangers[invite.room_id] = invite.inviter
        timer = asyncio.create_task(self._stranger_timeout(invite.room_id, invite.inviter))
        self._timers[invite.room_id] = timer

    async def _stranger_timeout(self, room_id: str, inviter: str) -> None:
        await asyncio.sleep(self.stranger_s)
        self._timers.pop(room_id, None)
        if self._tenant_of(inviter) is not None:
            self._strangers.pop(room_id, None)  # paired meanwhile: the room stays
            return
        log.info("matrix: a stranger's room where nothing was paired is left")
        await self._leave(room_id, "stranger room", "")

    def _unstranger(self, room_id: str) -> None:
        self._strangers.pop(room_id, None)
        timer = self._timers.pop(room_id, None)
        if timer is not None:
            timer.cancel()

    def _tenant_of(self, user_id: str) -> str | None:
        if self._receiving is None:
            return None
        probe = Inbound("matrix", user_id, user_id, "", "invite")
        return self._receiving.tenant_of(probe)

    async def _call(self, call: Awaitable[object], what: str) -> bool:
        try:
            await call
        except MatrixError as exc:
            log.warning("matrix: %s failed: %s", what, exc)
            return False
        return True

    async def _route(self, msg: Message) -> tuple[str, Inbound] | None:
        """The chat and the inbound message to answer, or None: nothing to answer (what
        is due instead, a notice or leaving the room, is done)."""
        group = msg.room_id in self.allowed_rooms
        if not group and await self._closed(msg.room_id):
            return None
        if msg.encrypted and self._tenant_of(msg.sender) is not None:
            if msg.room_id not in self._told_encrypted:
                self._told_encrypted.add(msg.room_id)
                await self._call(self.out.notice(msg.room_id, ENCRYPTED), "encrypted notice")
            self._ignore("encrypted", 1)
            return None
        if msg.encrypted and group:
            self._ignore("encrypted", 1)  # a stranger's, unreadable: no mention to answer
            return None
        # a stranger's encrypted message in a direct room goes on, unread (no text): it
        # gets the stranger flow (the refusal, or silence), never the notice
        if group and not msg.mentions_me:
            return None  # group talk not meant for the bot
        chat = group_chat(msg.room_id, msg.sender) if group else msg.sender
        text = msg.text
        if group and text is not None:
            text = without_mention(text, self.me)
        inbound = Inbound(
            "matrix",
            msg.sender,
            chat,
            text or "",
            msg.event_id,
            is_private=not group,
            has_text=text is not None,
        )
        return chat, inbound

    async def _closed(self, room_id: str) -> bool:
        """Whether a message in this direct room goes unanswered: more than two people
        in it, or a history or join rule that is not private (the bot leaves it), or
        either not learned (fail closed). What is known costs nothing; what is not is
        asked once and kept."""
        while room_id not in self._gone:
            count, access = self._members.get(room_id), self._access.get(room_id, {})
            if count is None or len(access) < len(ACCESS_KEYS):
                news = self._news.get(room_id, 0)
                try:
                    asked = count if count is not None else await self.client.present(room_id)
                    told = await self.client.access(room_id) if not private(access) else access
                except MatrixError as exc:
                    log.warning("matrix: a room's members or access could not be read (%s)", exc)
                    self._ignore("room unknown", 1)
                    return True
                if self._news.get(room_id, 0) != news:
                    continue  # a sync told of a change meanwhile: that, or ask again
                count, access = asked, told
                self._members[room_id], self._access[room_id] = count, access
            if count > 2:
                await self._leave_crowded(room_id, count)
            elif not private(access):
                await self._leave_exposed(room_id)
            else:
                return False
        self._ignore(self._gone[room_id], 1)
        return True

    def _forget(self, room_id: str) -> None:
        self._members.pop(room_id, None)
        self._news[room_id] += 1

    async def _leave_crowded(self, room_id: str, count: int) -> None:
        log.info("matrix: a direct room has %d people in it; the bot leaves it", count)
        await self._leave(room_id, "crowded room", NOT_HERE)

    async def _leave_exposed(self, room_id: str) -> None:
        log.info("matrix: a direct room is not private (history or join rule); the bot leaves")
        await self._leave(room_id, "exposed room", NOT_PRIVATE)

    async def _leave(self, room_id: str, why: str, reason: str) -> None:
        """Leave a direct room for good: nothing more is answered or sent there."""
        self._gone[room_id] = why
        self._unstranger(room_id)
        # forgotten before the leave is asked: no reminder or `roost send` is aimed at the
        # room from the moment it is left (not only once the homeserver has answered)
        await self._stored("a room left", self.store.forget_room(room_id))
        await self._call(self.client.leave(room_id, reason), "leave")

    def _spawn(
        self,
        chat: str,
        inbound: Inbound,
        msg: Message,
        update_id: int | None,
        stored: str | None = None,
        *,
        kept: bool = False,
    ) -> None:
        before = self._last.get(chat)
        task = asyncio.create_task(self._after(before, inbound, msg, update_id, stored, kept))
        self._last[chat] = task
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._done(chat, done))

    def _done(self, chat: str, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if self._last.get(chat) is task:
            del self._last[chat]
        if not task.cancelled() and task.exception() is not None:
            log.error("matrix: handling a message failed", exc_info=task.exception())

    async def _previews_off(self, room_id: str) -> None:
        """Turn link previews off in a room before its first answer: clients ask the
        homeserver to fetch every URL in a message, so a model-chosen URL (a query
        carrying memory) would be fetched with no click. Once per room: done, or
        forbidden (one log line; the answer goes on); a transient failure tries again
        with the room's next message."""
        if room_id in self._no_previews:
            return
        try:
            if await self.client.previews_off(room_id):
                log.info("matrix: link previews turned off in a room the bot answers in")
        except MatrixError as exc:
            if exc.retryable:
                log.warning("matrix: link previews could not be turned off yet (%s)", exc)
                return
            log.warning(
                "matrix: link previews stay on in room %s (%s): the bot may not set %s; "
                "give it the power level to change room state there, or turn URL previews "
                "off in the client; answering anyway",
                room_id,
                exc,
                PREVIEWS,
            )
        self._no_previews.add(room_id)

    async def _after(
        self,
        before: asyncio.Task[None] | None,
        inbound: Inbound,
        msg: Message,
        update_id: int | None,
        stored: str | None = None,
        kept: bool = False,
    ) -> None:
        """Handle the message in its chat's order and mark it handled in the inbox: once
        its answer's text was delivered or kept (before files and a voice message), else
        when handling ended (also when it failed: an error a retry would not fix is not
        tried again at every start). Cancelled (roost stopping) before that, it stays for
        the next start. `stored`: the answer the session holds for it already (an earlier
        process died before its mark), sent again instead of asking the model: its
        messages' transaction ids are the answer's own, so the homeserver shows what
        reached it already once. `kept`: an earlier run's row, counted as begun once its
        turn comes (`MatrixInbox.started`), not when it waited behind one that killed."""
        if before is not None:
            await asyncio.gather(before, return_exceptions=True)  # the chat's order
        if kept and update_id is not None and self.inbox is not None:
            try:  # an earlier run's message: this run begins it (`MatrixInbox.started`)
                await self.inbox.started(update_id)
            except StorageError as exc:
                log.warning("matrix: a kept message's try could not be counted: %s", exc)
        marked = update_id is None

        async def settle() -> None:
            nonlocal marked
            if not marked and update_id is not None:
                marked = True
                await self._mark(update_id)

        try:
            # else the room grew or opened while the message waited its turn
            if not (inbound.is_private and await self._closed(msg.room_id)):
                if stored is not None:
                    await self._resend(inbound, msg, stored, settle)
                else:
                    await self._handle(inbound, msg, settle)
        finally:
            if not _cancelling():
                await settle()

    async def _resend(
        self, inbound: Inbound, msg: Message, text: str, settle: Callable[[], Awaitable[None]]
    ) -> None:
        """Send the stored answer to a kept message (no model, nothing stored again)."""
        log.info("matrix: a kept message was answered before the restart; its stored answer "
                 "is sent again (the homeserver keeps what arrived once)")  # fmt: skip
        reply = self._reply(inbound, msg, with_voice=False)
        reply.stream.resumed = True
        reply.on_settled = settle
        await reply.send(Final(text, "answer"))

    def _reply(self, inbound: Inbound, msg: Message, *, with_voice: bool = True) -> MatrixReply:
        return MatrixReply(
            self.out,
            inbound,
            msg.room_id,
            msg.event_id,
            self.me,
            every_s=self._every_s,
            undelivered=self._undelivered,
            speak=self._speak if with_voice else None,
        )

    # -- one message ---------------------------------------------------------------------------

    async def _handle(
        self,
        inbound: Inbound,
        msg: Message,
        settled: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        receiving = self._receiving
        tenant = receiving.tenant_of(inbound) if receiving is not None else None
        if tenant is not None and inbound.is_private:
            now_ms = int(self._clock() * 1000)
            await self._stored(
                "a direct room", self.store.set_direct(msg.sender, msg.room_id, now_ms)
            )
        if tenant is not None and msg.media is not None and receiving is not None:
            inbox = receiving.inbox_of(tenant)
            att = await self.fetcher.attachment(msg.msgtype, msg.media, inbox, receiving)
            inbound = replace(inbound, attachments=(att,), has_text=True)
        await self._previews_off(msg.room_id)
        reply = self._reply(inbound, msg)
        reply.on_settled = settled  # the text out or kept: marked before files and voice
        final = await self._answer(inbound, reply)
        if not inbound.is_private:
            return
        if receiving is not None and receiving.tenant_of(inbound) is not None:
            self._unstranger(msg.room_id)  # a known person's room (paired here, perhaps)
        elif tenant is None and final.kind in ("refusal", "silent"):
            await self._leave(msg.room_id, "stranger room", "")  # not paired meanwhile


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _report(task: asyncio.Task[None]) -> None:
    """The sync loop only ends when stopped; anything else is said loudly."""
    if not task.cancelled() and task.exception() is not None:
        log.error("matrix: the sync loop stopped; restart roost", exc_info=task.exception())
