"""Leases with expiry in `storage_leases`, the same SQL on both backends.

A lease is (name, owner, expires_ms). `acquire` takes it when nobody holds
it, when its holder's time ran out, or when `owner` holds it already (a
renewal): one upsert whose update only happens under those conditions, so
two acquirers at once cannot both win (SQLite: one writer; PostgreSQL: the
row lock of ON CONFLICT). Times come from the injected clock (ms); an
instance that stops renewing loses its leases when they expire.
`claim_instance` is `[cluster] instance`: a name held by a live process
refuses a second one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bridge.storage.errors import LeaseHeld
from bridge.storage.protocol import Database

_ACQUIRE = """
INSERT INTO storage_leases (name, owner, expires_ms) VALUES (:name, :owner, :expires)
ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_ms = excluded.expires_ms
WHERE storage_leases.owner = excluded.owner OR storage_leases.expires_ms <= :now
RETURNING owner
"""


@dataclass(frozen=True, slots=True)
class Lease:
    name: str
    owner: str
    expires_ms: int


class Leases:
    def __init__(self, db: Database, clock: Callable[[], int]) -> None:
        self._db, self._clock = db, clock

    async def acquire(self, name: str, owner: str, ttl_ms: int) -> Lease | None:
        """The lease, held by `owner` until now + ttl; None when someone else holds it."""
        now = self._clock()
        got = await self._db.fetch_one(
            _ACQUIRE, {"name": name, "owner": owner, "expires": now + ttl_ms, "now": now}
        )
        return None if got is None else Lease(name, owner, now + ttl_ms)

    async def renew(self, name: str, owner: str, ttl_ms: int) -> Lease | None:
        """Extend `owner`'s lease that has not run out; None when it ran out or another
        holds it (unlike `acquire`, never takes a lease that is free: a fence for work
        begun under the lease)."""
        now = self._clock()
        got = await self._db.fetch_one(
            "UPDATE storage_leases SET expires_ms = ? "
            "WHERE name = ? AND owner = ? AND expires_ms > ? RETURNING owner",
            (now + ttl_ms, name, owner, now),
        )
        return None if got is None else Lease(name, owner, now + ttl_ms)

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
            "SELECT owner, expires_ms FROM storage_leases WHERE name = ? AND expires_ms > ?",
            (name, self._clock()),
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
