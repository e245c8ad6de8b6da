"""Take (delete) every lease of one owner under a name prefix in one statement: leases
used as marks addressed to a process (the web's relayed stops, `bridge.channels.web.relay`).

`take_all(db, owner, prefix)` deletes them all and returns the names of those that
had not expired (by the database's clock, as `bridge.storage.leases` reads it): a
mark is taken once, by one process, and an expired one goes away unread. The same
SQL on both backends (`DELETE ... RETURNING`, SQLite 3.35 and later).
"""

from __future__ import annotations

from bridge.storage.protocol import Database


async def take_all(db: Database, owner: str, prefix: str) -> list[str]:
    """Delete `owner`'s leases whose name starts with `prefix`; the unexpired names."""
    rows = await db.fetch_all(
        "DELETE FROM storage_leases WHERE owner = ? AND substr(name, 1, ?) = ?"
        f" RETURNING name, CASE WHEN expires_ms > {db.dialect.now_ms} THEN 1 ELSE 0 END",
        (owner, len(prefix), prefix),
    )
    return sorted(str(name) for name, live in rows if live)
