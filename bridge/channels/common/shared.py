"""Instances that share one bot or number: any one stores an update, the lease's holder answers.

Platform-free; Telegram (`bridge.channels.telegram.shared`) and WhatsApp
(`bridge.channels.whatsapp.shared`) store their updates into the durable
inbox (`channel_inbox`, `new`, owned by nobody) BEFORE their webhook route
answers 200, then call `wake()`, which NOTIFYs the platform's topic and
wakes every instance. Each instance runs a `bridge.core.dispatch.Dispatcher`
over the inbox (`InboxSource`): woken by the notify, and every third of
`lease_s` (so a dead instance's chats are found once their leases expire),
it takes the lease of each chat with open updates that nobody holds
(`chat:<source>:<chat>`, `[cluster] lease_s`) and answers that chat's
updates one at a time, oldest first (`ChatQueue.claim`; the platform's
`answer` marks each done once its answer was delivered or kept in the
outbox); so one person's turns stay in order and run on one instance at a
time. An update taken again (a dead instance's) whose turn the session already
stored (that instance died between the turn's end and the done mark) is not
asked of the model again: `resend` sends its stored answer again in the
chat's order (`InboxMarks.stored_answer`) and it is marked done. The lease is renewed
while a turn runs; a renewal that finds it lost (this instance was away
longer than the lease) is a fence: the instance takes no further update of
that chat.

An update taken more than `MAX_TRIES` times (it killed the instances that
took it) is given up: the person is told once (`give_up`, through the
outbox; `GIVEN_UP`) and it is marked dropped. An update whose answer was
already kept in the outbox is marked done, not answered again. What is not
closed: an instance killed while a short answer's sendMessage is on its way
may have that answer (the same stored text) delivered again, and a lease
lost (a loop stalled longer than `lease_s`) while the turn runs lets another
instance answer that one update again (at-least-once at those points;
docs/scaling.md).

`stop(grace_s)`: no new update is taken; the turns under way finish for up
to `grace_s` (then they are cancelled, their updates stay open), and only
THEN are the leases released, so another instance answers what is left at
once and never an update this one is still answering.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from bridge.channels.common.chat_queue import ChatQueue, Taken
from bridge.channels.common.inbox_marks import InboxMarks
from bridge.core.dispatch import Dispatcher
from bridge.storage.errors import StorageError
from bridge.storage.leases import Leases

log = logging.getLogger(__name__)
MAX_TRIES: Final = 3
GIVEN_UP: Final = (
    "⚠️ Something went wrong each time I tried to answer your last message, so I stopped "
    "trying. Please send it again, perhaps worded differently."
)

Answer = Callable[[Taken], Awaitable[None]]
Resend = Callable[[Taken, str], Awaitable[bool]]  # its stored answer sent again: out or kept?


@dataclass(frozen=True, slots=True)
class Cluster:
    """Instances sharing a bot or a number (`[database] url` PostgreSQL): the leases per
    chat and their time."""

    leases: Leases
    ttl_ms: int


class InboxSource:
    """The durable inbox as the dispatcher's `WorkSource`: a chat's key is
    "<source>:<chat>", so its lease is `chat:<source>:<chat>`."""

    def __init__(self, inbox: InboxMarks, unmarked: set[int]) -> None:
        self.inbox = inbox
        self.queue = ChatQueue(inbox.db, inbox.source, channel=inbox.channel)
        self._prefix = f"{inbox.source}:"
        self._unmarked = unmarked  # answered, whose done mark could not be written

    async def waiting(self, limit: int) -> list[str]:
        return [self._prefix + chat for chat in (await self.queue.open_chats())[:limit]]

    async def next(self, key: str) -> Taken | None:
        return await self.queue.claim(key.removeprefix(self._prefix), self.inbox.owner)

    async def finish(self, item: Taken) -> None:
        """Marked done by the dispatch already (once settled); written again only when
        that mark failed, so the chat's next claim does not take it twice."""
        if item.update_id in self._unmarked:
            await self.inbox.done(item.update_id)
            self._unmarked.discard(item.update_id)

    async def failed(self, item: Taken) -> None:
        """Not reached: `SharedWork` answers every exception itself."""


class SharedWork:
    """This instance's part of one source's work (the inbox's `owner`: unique per start);
    `topic` is the notify that wakes the instances."""

    def __init__(
        self,
        inbox: InboxMarks,
        leases: Leases,
        ttl_ms: int,
        answer: Answer,
        give_up: Answer,
        *,
        topic: str,
        unmarked: set[int] | None = None,
        max_tries: int = MAX_TRIES,
        resend: Resend | None = None,
    ) -> None:
        self.inbox, self._leases, self.ttl_ms, self.topic = inbox, leases, ttl_ms, topic
        self._resend = resend
        self.source = InboxSource(inbox, set() if unmarked is None else unmarked)
        self._answer, self._give_up, self._max_tries = answer, give_up, max_tries
        self.dispatcher: Dispatcher[Taken] | None = None
        self._runner: asyncio.Task[None] | None = None

    async def wake(self) -> None:
        """Updates were stored (committed): wake every instance (a failure is logged: the
        next poll, every third of the lease, finds them)."""
        try:
            await self.inbox.db.notify(self.topic)
        except StorageError as exc:
            log.warning("%s: instances not woken (%s)", self.inbox.channel, exc)

    def start(self) -> None:
        if self._runner is None:
            self._runner = asyncio.create_task(self._run(), name=f"{self.topic}-shared")

    async def _run(self) -> None:
        async with self.inbox.db.subscribe(self.topic) as wake:
            self.dispatcher = Dispatcher(
                self.source,
                self._leases,
                self.inbox.owner,
                self._one,
                ttl_ms=self.ttl_ms,
                poll_s=self.ttl_ms / 3000,
                wake=wake,
            )
            await self.dispatcher.run()

    async def _one(self, taken: Taken) -> None:
        if taken.tries > 1 and await self.source.queue.answered(taken):
            return  # its answer was kept before an instance died
        if taken.tries > 1 and await self._resent(taken):
            return  # its turn was stored before an instance died: its answer resent
        if taken.tries > self._max_tries:
            log.error(
                "%s: update %d was taken %d times without an answer; given up",
                self.inbox.channel,
                taken.update_id,
                taken.tries - 1,
            )
            try:
                await self._give_up(taken)
            finally:
                await self.inbox.done(taken.update_id, dropped=True)
            return
        try:
            await self._answer(taken)
        except Exception:  # marked done by the dispatch; the chat's next messages still go
            log.exception("%s: answering update %d failed", self.inbox.channel, taken.update_id)

    async def _resent(self, taken: Taken) -> bool:
        """Whether the session holds the update's turn already and its stored answer was
        sent again, delivered or kept in the outbox (then it is marked done)."""
        if self._resend is None:
            return False
        try:
            stored = await self.inbox.stored_answer(taken.chat, taken.msg)
        except StorageError as exc:
            log.warning("%s: update %d's stored turn could not be read: %s",
                        self.inbox.channel, taken.update_id, exc)  # fmt: skip
            return False
        if stored is None or not await self._resend(taken, stored):
            return False
        log.info("%s: update %d was answered by an instance that died; its stored answer "
                 "is resent", self.inbox.channel, taken.update_id)  # fmt: skip
        await self.inbox.done(taken.update_id)
        return True

    @property
    def answered(self) -> int:
        return 0 if self.dispatcher is None else self.dispatcher.handled

    async def stop(self, grace_s: float) -> None:
        """Take no new update; let the turns under way finish (up to `grace_s`, then cancel
        them); THEN release this instance's chat leases."""
        if self._runner is None:
            return
        dispatcher = self.dispatcher
        self._runner.cancel()  # the scan and the wait for work; the chats' tasks go on
        await asyncio.gather(self._runner, return_exceptions=True)
        if dispatcher is not None:
            with contextlib.suppress(StorageError):  # otherwise they expire after lease_s
                await dispatcher.stop(grace_s)
