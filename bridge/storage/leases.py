"""Leases with expiry in `storage_leases`, the same SQL on both backends.

A lease is (name, owner, expires_ms). `acquire` takes it when nobody holds
it, when its holder's time ran out, or when `owner` holds it already (a
renewal): one upsert whose update only happens under those conditions, so
two acquirers at once cannot both win (SQLite: one writer; PostgreSQL: the
row lock of ON CONFLICT). Times come from the injected clock (ms); an
instance that stops renewing loses its leases when they expire.
`claim_instance` is `[cluster] instance`: a name held by a live process
refuses a second one; `InstanceName` holds it while the process runs
(renewed every third of its time; released at a clean stop, so a restart
takes it at once; a killed holder's name is free `ttl` after its last
renewal). Without an injected clock the database's clock counts, one clock
for every machine of a cluster, read inside each statement (one statement
per call, no round trip for the time).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from bridge.storage.errors import LeaseHeld, StorageError
from bridge.storage.protocol import Database

_ACQUIRE = """
INSERT INTO storage_leases (name, owner, expires_ms) VALUES (:name, :owner, {now} + :ttl)
ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_ms = excluded.expires_ms
WHERE storage_leases.owner = excluded.owner OR storage_leases.expires_ms <= {now}
RETURNING expires_ms
"""


@dataclass(frozen=True, slots=True)
class Lease:
    name: str
    owner: str
    expires_ms: int


log = logging.getLogger("roost.storage")


class Leases:
    def __init__(self, db: Database, clock: Callable[[], int] | None = None) -> None:
        self._db, self._clock = db, clock

    def _now(self) -> str:
        """`now` in ms inside a statement: the injected clock's reading as a literal, or
        the database's clock (no statement of its own)."""
        if self._clock is not None:
            return str(int(self._clock()))
        return f"({self._db.dialect.now_ms})"

    async def acquire(self, name: str, owner: str, ttl_ms: int) -> Lease | None:
        """The lease, held by `owner` until now + ttl; None when someone else holds it.
        ONE statement."""
        got = await self._db.fetch_one(
            _ACQUIRE.format(now=self._now()), {"name": name, "owner": owner, "ttl": ttl_ms}
        )
        return None if got is None else Lease(name, owner, int(got[0]))

    async def renew(self, name: str, owner: str, ttl_ms: int) -> Lease | None:
        """Extend `owner`'s lease that has not run out; None when it ran out or another
        holds it (unlike `acquire`, never takes a lease that is free: a fence for work
        begun under the lease)."""
        now = self._now()
        got = await self._db.fetch_one(
            f"UPDATE storage_leases SET expires_ms = {now} + ? "
            f"WHERE name = ? AND owner = ? AND expires_ms > {now} RETURNING expires_ms",
            (ttl_ms, name, owner),
        )
        return None if got is None else Lease(name, owner, int(got[0]))

    async def release(self, name: str, owner: str) -> bool:
        gone = await self._db.execute(
            "DELETE FROM storage_leases WHERE name = ? AND owner = ?", (name, owner)
        )
        return gone > 0

    async def release_all(self, owner: str, prefix: str) -> int:
        """Let go every lease of `owner` whose name starts with `prefix` (a stop)."""
        return await self._db.execute(
            "DELETE FROM storage_leases WHERE owner = ? AND substr(name, 1, ?) = ?",
            (owner, len(prefix), prefix),
        )

    async def holder(self, name: str) -> Lease | None:
        """Who holds `name` now (None: nobody, or the lease expired)."""
        row = await self._db.fetch_one(
            "SELECT owner, expires_ms FROM storage_leases"
            f" WHERE name = ? AND expires_ms > {self._now()}",
            (name,),
        )
        return None if row is None else Lease(name, str(row[0]), int(row[1]))


async def claim_instance(leases: Leases, instance: str, token: str, ttl_ms: int) -> Lease:
    """Hold `instance:<name>` for this process (`token`: unique per process start);
    LeaseHeld when another live process has the name."""
    got = await leases.acquire(f"instance:{instance}", token, ttl_ms)
    if got is None:
        raise LeaseHeld(
            f"cluster.instance {instance!r} is already in use by a running instance; "
            "give this one another name (or wait for the other's lease to expire)"
        )
    return got


class InstanceName:
    """`[cluster] instance` held by this process: claimed by `start`, renewed in the
    background every third of `ttl_ms`, given up by `release`. A renewal that finds
    the name taken (this process was away longer than its lease) sets `lost`."""

    def __init__(self, leases: Leases, instance: str, token: str, ttl_ms: int) -> None:
        self._leases, self.instance, self.token, self.ttl_ms = leases, instance, token, ttl_ms
        self.lost = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> Lease:
        got = await claim_instance(self._leases, self.instance, self.token, self.ttl_ms)
        self._task = asyncio.get_running_loop().create_task(self._renew())
        return got

    async def _renew(self) -> None:
        name = f"instance:{self.instance}"
        while True:
            await asyncio.sleep(self.ttl_ms / 3000)
            try:
                got = await self._leases.acquire(name, self.token, self.ttl_ms)
            except StorageError as exc:  # the database away: the next renewal tries again
                log.warning("cluster.instance %s: lease not renewed (%s)", self.instance, exc)
                continue
            if got is None:
                log.error(
                    "cluster.instance %s: the name was taken by another process while this "
                    "one could not renew it",
                    self.instance,
                )
                self.lost.set()
                return

    async def release(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        with contextlib.suppress(StorageError):  # expires by itself otherwise
            await self._leases.release(f"instance:{self.instance}", self.token)


class Singleton:
    """Work that one instance of a cluster runs at a time (the scheduler): `run(work)`
    waits until it holds the lease `name`, runs `work()` while it holds it (renewed
    every third of `ttl_ms`), and when a renewal finds it lost (this instance was away
    longer than its lease) cancels the work and waits for the lease again. It returns
    when `work()` returns (a stop). A killed holder's lease is free `ttl_ms` after its
    last renewal; `release()` at a clean stop hands it over at once."""

    def __init__(self, leases: Leases, name: str, owner: str, ttl_ms: int) -> None:
        self._leases, self.name, self.owner, self.ttl_ms = leases, name, owner, ttl_ms
        self.held = False

    async def _try(self, renew: bool) -> bool | None:
        """Whether the lease is held now; None when the database could not say."""
        try:
            if renew:
                return await self._leases.renew(self.name, self.owner, self.ttl_ms) is not None
            return await self._leases.acquire(self.name, self.owner, self.ttl_ms) is not None
        except StorageError as exc:
            log.warning("lease %s: %s", self.name, exc)
            return None

    async def run(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        every = self.ttl_ms / 3000
        while True:
            if not await self._try(renew=False):
                await asyncio.sleep(every)
                continue
            self.held = True
            task = asyncio.create_task(work())
            try:
                while not task.done():
                    await asyncio.wait({task}, timeout=every)
                    if not task.done() and await self._try(renew=True) is False:
                        log.error("lease %s was lost; its work stops here", self.name)
                        break
            finally:
                self.held = False
                if not task.done():
                    task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            if not task.cancelled():
                return  # the work ended by itself: a stop

    async def release(self) -> None:
        with contextlib.suppress(StorageError):  # expires by itself otherwise
            await self._leases.release(self.name, self.owner)
