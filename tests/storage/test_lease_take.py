"""`take_all` (bridge/storage/lease_take.py) on both backends: one owner's leases under a
prefix are deleted in one statement, the unexpired names returned, once."""

from __future__ import annotations

from typing import Any

from bridge.storage.lease_take import take_all
from bridge.storage.leases import Leases


async def test_takes_the_owners_leases_under_the_prefix_once(db: Any) -> None:
    leases = Leases(db)  # the database's clock, as take_all reads it
    for name, owner, ttl in [
        ("mark:x", "a", 60_000),
        ("mark:y", "a", 60_000),
        ("mark:old", "a", -1_000),  # expired: dropped, not returned
        ("mark:z", "b", 60_000),  # another owner's
        ("chat:x", "a", 60_000),  # another prefix
    ]:
        assert await leases.acquire(name, owner, ttl) is not None
    assert await take_all(db, "a", "mark:") == ["mark:x", "mark:y"]
    assert await take_all(db, "a", "mark:") == []
    assert (await leases.holder("mark:z")) is not None
    assert (await leases.holder("chat:x")) is not None
    assert (
        await db.fetch_value("SELECT COUNT(*) FROM storage_leases WHERE name = ?", ("mark:old",))
        == 0
    )
