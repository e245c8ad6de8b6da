"""Chats' work shared by instances: each chat runs on the instance holding its lease.

Instances on one database see the same waiting work (a `WorkSource`: for
roost, the durable inbox every instance stores updates into). A
`Dispatcher` per instance takes the lease `chat:<key>` of a chat with work
waiting (`bridge.storage.leases`: one winner, expiry by the injected clock)
and runs that chat's items one at a time, oldest first, until none is left;
then it lets the lease go. So one chat's items run in order, on one
instance at a time, while different chats run at once (up to `max_chats`
here). `stop(grace_s)` takes no new item, lets the items under way finish
for up to `grace_s`, and only then lets the leases go. The lease is renewed
every third of its time while an item runs (`bridge.core.lease_hold.renewing`);
an instance that dies stops renewing, and once its leases expire another
instance's dispatcher (woken by the source's notify, or by its own poll
every `poll_s`) takes those chats. A chat's worker that ends makes the
dispatcher look for waiting chats again only when a scan passed one over
since (a chat served here at that moment, or no room left): otherwise every
waiting chat was taken, or its notify is still to come, and the extra
`waiting()` per answered chat (one statement per update) is not made. The
item a dead instance was running is not finished, so the next holder runs it
again: an item's handler must make
its effect once (roost: a reply already kept for that message is not sent
again). An item is finished only while its lease is still held
(`Leases.renew` right before `finish`, which never takes a lease that ran
out): a holder that stalled past its lease cannot mark work another
instance has taken or finished.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, Protocol, TypeVar

from bridge.core.lease_hold import renewing
from bridge.storage.leases import Leases
from bridge.storage.protocol import Subscription

log = logging.getLogger(__name__)

Item = TypeVar("Item")


class WorkSource(Protocol[Item]):
    """Waiting work, by chat, in the shared database."""

    async def waiting(self, limit: int) -> list[str]:
        """Keys of chats with unfinished items, the one waiting longest first."""
        ...

    async def next(self, key: str) -> Item | None:
        """The oldest unfinished item of chat `key` (None: nothing waits)."""
        ...

    async def finish(self, item: Item) -> None:
        """Mark `item` done (called right after its chat's lease was renewed)."""
        ...

    async def failed(self, item: Item) -> None:
        """The handler raised on `item` (a bug, not a failed turn: a turn that fails
        answers the person): the source decides whether it is tried again."""
        ...


PREFIX = "chat:"


def lease_name(key: str) -> str:
    return PREFIX + key


class Dispatcher(Generic[Item]):
    """See the module. `run()` until cancelled; `stop()` lets every lease go."""

    def __init__(
        self,
        source: WorkSource[Item],
        leases: Leases,
        owner: str,
        handle: Callable[[Item], Awaitable[None]],
        *,
        ttl_ms: int,
        poll_s: float,
        wake: Subscription | None = None,
        max_chats: int = 64,
    ) -> None:
        if ttl_ms <= 0 or poll_s <= 0:
            raise ValueError("ttl_ms and poll_s must be positive")
        self._source, self._leases, self._owner = source, leases, owner
        self._handle, self._ttl_ms, self._poll_s = handle, ttl_ms, poll_s
        self._wake, self._max = wake, max(1, max_chats)
        self._chats: dict[str, asyncio.Task[None]] = {}
        self._again = asyncio.Event()  # a chat's worker ended: look for work at once
        # a scan passed over a waiting chat (served here then, or no room): when a chat's
        # worker ends, only then can a waiting chat be left that no wake will bring
        self._passed_over = False
        self._stopping = False  # no new item is taken
        self.handled = 0
        self.lost = 0  # chats whose lease ran out under this instance

    @property
    def holding(self) -> frozenset[str]:
        return frozenset(self._chats)

    async def run(self) -> None:
        while True:
            try:
                await self.scan()
            except Exception as exc:  # the database is away: next poll
                log.warning("looking for waiting chats failed: %s", exc)
            await self._sleep()

    async def scan(self) -> None:
        """Take the lease of every waiting chat nobody holds (up to `max_chats` running)."""
        room = self._max - len(self._chats)
        self._passed_over = room <= 0
        if room <= 0 or self._stopping:
            return
        for key in await self._source.waiting(self._max + len(self._chats)):
            if key in self._chats or self._stopping:
                self._passed_over = True
                continue
            if await self._leases.acquire(lease_name(key), self._owner, self._ttl_ms) is None:
                continue  # another instance holds it
            self._chats[key] = asyncio.create_task(self._serve(key), name=f"chat {key}")
            room -= 1
            if room <= 0:
                self._passed_over = True  # the rest of the list, if any
                return

    async def _sleep(self) -> None:
        waits: list[asyncio.Future[object]] = [asyncio.ensure_future(self._again.wait())]
        if self._wake is not None:
            waits.append(asyncio.ensure_future(self._wake.wait()))
        try:
            await asyncio.wait(waits, timeout=self._poll_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
        self._again.clear()

    async def _serve(self, key: str) -> None:
        name = lease_name(key)
        try:
            while not self._stopping:
                item = await self._source.next(key)
                if item is None:
                    return
                try:
                    async with renewing(self._leases, name, self._owner, self._ttl_ms):
                        await self._handle(item)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("a chat's item failed in its handler")
                    await self._source.failed(item)
                    return  # the lease goes; the source said whether the item waits again
                # still ours? an instance that stalled past its lease stops here
                if await self._leases.renew(name, self._owner, self._ttl_ms) is None:
                    self.lost += 1
                    log.warning("lease of a chat ran out while its item ran; left to its holder")
                    return
                await self._source.finish(item)
                self.handled += 1
        except asyncio.CancelledError:
            raise
        except Exception:  # the database failed: the item stays waiting, the lease goes
            log.exception("a chat's work stopped; its lease is let go, its items wait")
        finally:
            try:  # let go BEFORE the chat can be served again: a scan that found it gone
                # from `_chats` would take the lease anew (the same owner may), and this
                # release would then take it from the new server mid-item
                with contextlib.suppress(Exception):
                    await self._leases.release(name, self._owner)
            finally:
                self._chats.pop(key, None)
                if self._passed_over:  # a chat may wait that no wake will bring: look
                    self._again.set()

    async def stop(self, grace_s: float = 0.0) -> None:
        """Take no new item; let the items under way finish for up to `grace_s`, then
        cancel the rest (they stay unfinished); THEN let the leases go (released first,
        another instance could run an item this one is still running). Cancel `run()`
        first."""
        self._stopping = True
        tasks = list(self._chats.values())
        if tasks and grace_s > 0:
            _, late = await asyncio.wait(tasks, timeout=grace_s)
            tasks = list(late)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        # and one a cancelled scan took without starting its chat
        await self._leases.release_all(self._owner, PREFIX)
