"""Instances that share one bot: any one stores an update, the holder of the chat's lease answers.

With `[database] url` on PostgreSQL and Telegram in webhook mode, every
instance serves the one webhook URL (a load balancer spreads the updates).
`received` stores an update durably (`UpdateInbox.store`, de-duplicated by
its `update_id`, owned by nobody: `new`) BEFORE the route answers 200, and
then NOTIFYs `TOPIC`, which wakes every instance. Each instance's scanner
(`run`) looks for chats with open updates whose lease nobody holds
(`ChatQueue.open_chats`, at every wake and every third of `lease_s`, so a
dead instance's chats are found once their leases expire), takes the chat's
lease (`Leases.acquire`, `chat:<source>:<chat>`, `[cluster] lease_s`) and
starts one worker for it. The worker takes the chat's updates one at a
time, oldest first (`ChatQueue.claim`), and answers each (`answer`, the
channel's durable dispatch: marked done once the answer was delivered or
kept in the outbox); so one person's turns stay in order and one instance
at a time runs them. While it works the lease is renewed every third of
its time; a renewal that finds it lost (this instance was away longer than
the lease) is a fence: the worker takes no further update of that chat.
When the chat has nothing open, the worker lets the lease go and looks
once more (an update stored meanwhile is not left behind: its NOTIFY found
the lease still held).

An update taken more than `MAX_TRIES` times (it killed the instances that
took it) is given up: the person is told once (`give_up`, through the
outbox) and it is marked dropped. An update whose answer was already kept
in the outbox is marked done, not answered again. What is not closed: an
instance killed between sending an answer and marking its update done, or
a lease lost (a loop stalled longer than `lease_s`) while the turn runs,
lets another instance answer that one update again (at-least-once at that
one point; docs/scaling.md).

`stop(grace_s)`: no new update is taken; the workers finish their turn for
up to `grace_s` (then they are cancelled, their updates stay open), and
only THEN are the leases released, so another instance answers what is
left at once and never an update this one is still answering.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final

from bridge.channels.telegram.chat_queue import LEASE_PREFIX, ChatQueue, Taken, lease_name
from bridge.channels.telegram.inbox import UpdateInbox
from bridge.storage.errors import StorageError
from bridge.storage.leases import Leases

log = logging.getLogger("bridge.channels.telegram.channel")
TOPIC: Final = "telegram_inbox"
MAX_TRIES: Final = 3

Answer = Callable[[Taken], Awaitable[None]]


class SharedWork:
    """This instance's part of one bot's work (`owner`: unique per process start)."""

    def __init__(
        self,
        inbox: UpdateInbox,
        leases: Leases,
        ttl_ms: int,
        answer: Answer,
        give_up: Answer,
        *,
        max_tries: int = MAX_TRIES,
    ) -> None:
        self.inbox, self._leases, self.ttl_ms = inbox, leases, ttl_ms
        self.queue = ChatQueue(inbox.db, inbox.source)
        self.owner = inbox.owner
        self._answer, self._give_up, self._max_tries = answer, give_up, max_tries
        self._chats: dict[str, asyncio.Task[None]] = {}
        self._scanner: asyncio.Task[None] | None = None
        self._stopping = False
        self.answered = 0  # updates this instance answered (bench, tests)

    async def received(self, updates: Iterable[dict[str, Any]]) -> None:
        """Store updates (committed when this returns; StorageError: not stored) and wake
        every instance."""
        if await self.inbox.store(updates, taken=False):
            try:
                await self.inbox.db.notify(TOPIC)
            except StorageError as exc:  # stored: the next sweep finds it
                log.warning("telegram: instances not woken (%s)", exc)

    def start(self) -> None:
        if self._scanner is None:
            self._scanner = asyncio.create_task(self._run(), name="telegram-shared-scan")

    async def _run(self) -> None:
        every = self.ttl_ms / 3000
        async with self.inbox.db.subscribe(TOPIC) as sub:
            while not self._stopping:
                try:
                    await self._scan()
                except StorageError as exc:
                    log.warning("telegram: open chats not read (%s); trying again", exc)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(sub.wait(), every)

    async def _scan(self) -> None:
        for chat in await self.queue.open_chats():
            if self._stopping:
                return
            if chat in self._chats:  # its worker looks again before it lets the lease go
                continue
            name = lease_name(self.queue.source, chat)
            if await self._leases.acquire(name, self.owner, self.ttl_ms) is None:
                continue  # another instance took it first
            task = asyncio.create_task(self._work(chat, name), name=f"telegram-chat-{chat}")
            self._chats[chat] = task

    async def _work(self, chat: str, name: str) -> None:
        lost = asyncio.Event()
        renewer = asyncio.create_task(self._renew(name, lost))
        try:
            while not lost.is_set() and not self._stopping:
                taken = await self.queue.claim(chat, self.owner)
                if taken is None:
                    await self._leases.release(name, self.owner)
                    if self._stopping or not await self.queue.has_open(chat):
                        return
                    if await self._leases.acquire(name, self.owner, self.ttl_ms) is None:
                        return  # another instance has it now
                    continue
                await self._one(taken)
        except StorageError as exc:  # the lease expires; an instance takes the chat again
            log.warning("telegram: chat %s left for later (%s)", chat, exc)
        finally:
            renewer.cancel()
            await asyncio.gather(renewer, return_exceptions=True)
            if self._chats.get(chat) is asyncio.current_task():
                del self._chats[chat]

    async def _one(self, taken: Taken) -> None:
        if taken.tries > 1 and await self.queue.answered(taken):
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
        self.answered += 1

    async def _renew(self, name: str, lost: asyncio.Event) -> None:
        while True:
            await asyncio.sleep(self.ttl_ms / 3000)
            try:
                held = await self._leases.renew(name, self.owner, self.ttl_ms)
            except StorageError as exc:  # the next renewal tries again
                log.warning("telegram: lease %s not renewed (%s)", name, exc)
                continue
            if held is None:
                log.error("telegram: lease %s was lost; this instance stops its work", name)
                lost.set()
                return

    async def stop(self, grace_s: float) -> None:
        """Take no new update; let the turns under way finish (up to `grace_s`, then cancel
        them); THEN release this instance's chat leases."""
        self._stopping = True
        if self._scanner is not None:
            self._scanner.cancel()
            await asyncio.gather(self._scanner, return_exceptions=True)
        working = set(self._chats.values())
        if working:
            _, late = await asyncio.wait(working, timeout=grace_s)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late, timeout=grace_s)
        with contextlib.suppress(StorageError):  # otherwise they expire after lease_s
            prefix = f"{LEASE_PREFIX}{self.queue.source}:"
            await self._leases.release_all(self.owner, prefix)
