"""Hold a cluster lease around one piece of work, waiting a bounded time for it.

For work that runs where its request arrived (the web page's turn: the HTTP
request is held by this instance) but must not run at once with the same
key's work on another instance. `LeaseHold.hold(key, wait_s)` yields True
once this process holds the lease `name_of(key)` (`bridge.storage.leases`,
ttl `ttl_ms`), renewed every third of its time while the work runs and
released after it; False when another instance held it for all of `wait_s`
(the caller answers that it is busy; nothing ran). Inside one process the
holders of one key take turns first (`KeyedLocks`, FIFO), so the lease is
taken and let go by one task at a time. Waiting polls the lease every
`poll_s` (an expired holder's lease is taken at the next poll); a wait is
logged (INFO), a refusal too (WARNING).

`renewing(...)` is the renewal beat alone (also the dispatcher's, for a
chat's item): a failed renewal is logged and tried at the next beat.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable

from bridge.core.locks import KeyedLocks
from bridge.storage.leases import Leases

log = logging.getLogger(__name__)


@contextlib.asynccontextmanager
async def renewing(leases: Leases, name: str, owner: str, ttl_ms: int) -> AsyncIterator[None]:
    """Renew `owner`'s lease every third of `ttl_ms` while inside."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(ttl_ms / 3000)
            try:
                await leases.renew(name, owner, ttl_ms)
            except Exception as exc:  # the database is away: next beat
                log.warning("renewing the lease %s failed: %s", name, exc)

    task = asyncio.create_task(beat(), name=f"renew {name}")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class LeaseHold:
    """Leases of this process (`owner`) held around work, one key at a time."""

    def __init__(
        self,
        leases: Leases,
        owner: str,
        ttl_ms: int,
        name_of: Callable[[str], str],
        *,
        poll_s: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._leases, self._owner, self._ttl_ms = leases, owner, ttl_ms
        self._name_of, self._poll_s, self._clock = name_of, poll_s, clock
        self._local: KeyedLocks[str] = KeyedLocks()
        self.waited = 0  # holds that found the lease taken at first
        self.refused = 0  # holds that gave up after `wait_s`

    @contextlib.asynccontextmanager
    async def hold(self, key: str, wait_s: float) -> AsyncIterator[bool]:
        """True once the lease is held (released after the block); False when another
        instance held it all of `wait_s` (the block should not do the work)."""
        name = self._name_of(key)
        deadline = self._clock() + wait_s
        async with self._local.hold(key):
            first = True
            while await self._leases.acquire(name, self._owner, self._ttl_ms) is None:
                if first:
                    self.waited += 1
                    first = False
                    log.info("%s is held by another instance; waiting up to %g s", name, wait_s)
                if self._clock() >= deadline:
                    self.refused += 1
                    log.warning("%s was held by another instance for %g s; not run", name, wait_s)
                    yield False
                    return
                await asyncio.sleep(min(self._poll_s, max(0.0, deadline - self._clock())))
            try:
                async with renewing(self._leases, name, self._owner, self._ttl_ms):
                    yield True
            finally:
                with contextlib.suppress(Exception):  # otherwise it expires after ttl
                    await asyncio.shield(self._leases.release(name, self._owner))
