"""Which tables hold a tenant's rows, for export and forget, found from the schema itself.

A table belongs to tenants when it has a `tenant` column; the engine's own
tables (`storage_*`) are left out of the export (they are derived or
bookkeeping). `forget` deletes a tenant's rows of every such table and its
text indexes in one transaction. It must run with no writer of the tenant
beside it: what a daemon had queued or in flight (a recall batch, a turn's end)
would be written after the transaction. `roost forget` (the one caller) holds
the home lock exclusively for it, so no daemon runs meanwhile.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from bridge.storage.protocol import Database


async def tenant_tables(db: Database) -> list[str]:
    """Every table with a `tenant` column, sorted."""
    return sorted(name for name, cols in (await db.tables()).items() if "tenant" in cols)


async def tenant_rows(db: Database, table: str, tenant: str) -> AsyncIterator[dict[str, object]]:
    """A tenant's rows of `table` (one of `tenant_tables`) as column -> value."""
    columns = (await db.tables())[table]
    rows = await db.fetch_all(f'SELECT * FROM "{table}" WHERE tenant = ?', (tenant,))
    for row in rows:
        yield dict(zip(columns, row, strict=True))


async def forget(db: Database, tenant: str) -> dict[str, int]:
    """Delete every row keyed by `tenant` and its text indexes; rows deleted per table."""
    gone: dict[str, int] = {}
    async with db.transaction():
        for table in await tenant_tables(db):
            gone[table] = await db.execute(f'DELETE FROM "{table}" WHERE tenant = ?', (tenant,))
        for name in await db.text_index_names(tenant):
            await db.text_index(name, tenant).drop()
    return gone
