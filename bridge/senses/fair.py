"""Fair shares of the decoder processes: a bounded number at once, turns by tenant.

`FairSlots(slots, per_tenant, max_waiting)` hands out at most `slots`
holds at a time, at most `per_tenant` of them to one tenant (the pool keeps
one slot for the others: a tenant sending bombs can never take them all),
and when a slot frees it goes round-robin to the next tenant with a waiter,
so a tenant with fifty files queued waits behind itself, never in front of
another. A tenant with `max_waiting` files already waiting gets `Busy` for
the next one at once. Pure asyncio, no I/O, no clock.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class Busy(Exception):
    """This tenant already has as many files waiting as it may."""


class FairSlots:
    def __init__(self, slots: int, per_tenant: int, max_waiting: int) -> None:
        self.slots = max(1, slots)
        self.per_tenant = max(1, min(per_tenant, self.slots))
        self.max_waiting = max_waiting
        self._running: dict[str, int] = {}
        self._waiting: dict[str, deque[asyncio.Future[None]]] = {}
        self._turn: deque[str] = deque()  # tenants with waiters, in the order they are served

    @property
    def busy(self) -> int:
        """Slots held now."""
        return sum(self._running.values())

    def waiting(self, tenant: str) -> int:
        return len(self._waiting.get(tenant, ()))

    def _may_run(self, tenant: str) -> bool:
        return self.busy < self.slots and self._running.get(tenant, 0) < self.per_tenant

    @asynccontextmanager
    async def hold(self, tenant: str) -> AsyncIterator[None]:
        """One slot for `tenant` while the block runs; `Busy` when its queue is full."""
        if self._may_run(tenant) and not self._waiting.get(tenant):
            self._running[tenant] = self._running.get(tenant, 0) + 1
        else:
            await self._wait(tenant)
        try:
            yield
        finally:
            self._release(tenant)

    async def _wait(self, tenant: str) -> None:
        queue = self._waiting.setdefault(tenant, deque())
        if len(queue) >= self.max_waiting:
            raise Busy()
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.append(granted)
        if tenant not in self._turn:
            self._turn.append(tenant)
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self._release(tenant)  # granted just before the cancel: hand it on
            else:
                self._forget(tenant, granted)
            raise

    def _forget(self, tenant: str, granted: asyncio.Future[None]) -> None:
        queue = self._waiting.get(tenant)
        if queue is not None and granted in queue:
            queue.remove(granted)
            if not queue:
                del self._waiting[tenant]
                self._turn.remove(tenant)

    def _release(self, tenant: str) -> None:
        left = self._running.get(tenant, 0) - 1
        if left > 0:
            self._running[tenant] = left
        else:
            self._running.pop(tenant, None)
        self._dispatch()

    def _dispatch(self) -> None:
        """Grant free slots round-robin to the tenants that wait and may run."""
        passed = 0  # tenants looked at in a row that could not run
        while self._turn and self.busy < self.slots and passed < len(self._turn):
            tenant = self._turn[0]
            self._turn.rotate(-1)
            queue = self._waiting[tenant]
            while queue and queue[0].done():  # cancelled while waiting
                queue.popleft()
            if queue and not self._may_run(tenant):
                passed += 1
                continue
            passed = 0
            if queue:
                self._running[tenant] = self._running.get(tenant, 0) + 1
                queue.popleft().set_result(None)
            if not queue:
                del self._waiting[tenant]
                self._turn.remove(tenant)
