"""Instances that share one bot: any one stores an update, the holder of the chat's lease answers.

With `[database] url` on PostgreSQL and Telegram in webhook mode, every
instance serves the one webhook URL (a load balancer spreads the updates);
in polling mode the one instance holding the poll lease polls
(`received_payload`).
`received` stores an update durably (`UpdateInbox.store`, de-duplicated by
its `update_id`, owned by nobody: `new`) BEFORE the route answers 200, and
then NOTIFYs `TOPIC`, which wakes every instance. Each instance runs a
`bridge.core.dispatch.Dispatcher` over the inbox (`InboxSource`): woken by
the notify, and every third of `lease_s` (so a dead instance's chats are
found once their leases expire), it takes the lease of each chat with open
updates that nobody holds (`chat:<source>:<chat>`, `[cluster] lease_s`) and
answers that chat's updates one at a time, oldest first (`ChatQueue.claim`;
the channel's durable dispatch marks each done once its answer was
delivered or kept in the outbox); so one person's turns stay in order and
run on one instance at a time. The lease is renewed while a turn runs; a
renewal that finds it lost (this instance was away longer than the lease)
is a fence: the instance takes no further update of that chat.

An update taken more than `MAX_TRIES` times (it killed the instances that
took it) is given up: the person is told once (`give_up`, through the
outbox) and it is marked dropped. An update whose answer was already kept
in the outbox is marked done, not answered again. What is not closed: an
instance killed between sending an answer and marking its update done, or
a lease lost (a loop stalled longer than `lease_s`) while the turn runs,
lets another instance answer that one update again (at-least-once at that
one point; docs/scaling.md).

`stop(grace_s)`: no new update is taken; the turns under way finish for up
to `grace_s` (then they are cancelled, their updates stay open), and only
THEN are the leases released, so another instance answers what is left at
once and never an update this one is still answering.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final

from bridge.channels.telegram.chat_queue import ChatQueue, Taken
from bridge.channels.telegram.inbox import UpdateInbox, updates_in
from bridge.core.dispatch import Dispatcher
from bridge.storage.errors import StorageError
from bridge.storage.leases import Leases

log = logging.getLogger("bridge.channels.telegram.channel")
TOPIC: Final = "telegram_inbox"
MAX_TRIES: Final = 3

Answer = Callable[[Taken], Awaitable[None]]


class InboxSource:
    """The durable inbox as the dispatcher's `WorkSource`: a chat's key is
    "<source>:<chat>", so its lease is `chat:<source>:<chat>`."""

    def __init__(self, inbox: UpdateInbox, unmarked: set[int]) -> None:
        self.inbox, self.queue = inbox, ChatQueue(inbox.db, inbox.source)
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
    """This instance's part of one bot's work (the inbox's `owner`: unique per start)."""

    def __init__(
        self,
        inbox: UpdateInbox,
        leases: Leases,
        ttl_ms: int,
        answer: Answer,
        give_up: Answer,
        *,
        unmarked: set[int] | None = None,
        max_tries: int = MAX_TRIES,
    ) -> None:
        self.inbox, self._leases, self.ttl_ms = inbox, leases, ttl_ms
        self.source = InboxSource(inbox, set() if unmarked is None else unmarked)
        self._answer, self._give_up, self._max_tries = answer, give_up, max_tries
        self.dispatcher: Dispatcher[Taken] | None = None
        self._runner: asyncio.Task[None] | None = None

    async def received(self, updates: Iterable[dict[str, Any]]) -> None:
        """Store updates (committed when this returns; StorageError: not stored) and wake
        every instance."""
        if await self.inbox.store(updates, taken=False):
            try:
                await self.inbox.db.notify(TOPIC)
            except StorageError as exc:  # stored: the next poll finds it
                log.warning("telegram: instances not woken (%s)", exc)

    async def received_payload(self, payload: bytes) -> None:
        """A `getUpdates` answer (the poll lease's holder): its updates stored and woken
        for, before the next poll confirms them."""
        await self.received(updates_in(payload))

    def start(self) -> None:
        if self._runner is None:
            self._runner = asyncio.create_task(self._run(), name="telegram-shared")

    async def _run(self) -> None:
        async with self.inbox.db.subscribe(TOPIC) as wake:
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
        if taken.tries > self._max_tries:
            log.error(
                "telegram: update %d was taken %d times without an answer; given up",
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
            log.exception("telegram: answering update %d failed", taken.update_id)

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
