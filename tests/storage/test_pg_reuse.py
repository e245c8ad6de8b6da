"""The PostgreSQL test databases a process reuses: `_reset` leaves one as a fresh migration does.

A migrated database an earlier test used is given to the next test after
`conftest._reset` (no row in any table but `storage_schema`, every sequence
restarted). If a row or a sequence's position outlived it, a later test
would see an earlier one's data, so this test fills every table, moves every
sequence, resets and looks.
"""

from __future__ import annotations

import asyncpg

from bridge.storage.postgres import PostgresDatabase
from bridge.storage.schema import MIGRATIONS
from tests.storage import conftest
from tests.storage.filler import value
from tests.storage.pg_server import PgServer

# PostgreSQL's column types as the filler's SQLite kinds
_KINDS = {"bigint": "INTEGER", "integer": "INTEGER", "smallint": "INTEGER", "bytea": "BLOB"}
_KINDS |= {"double precision": "REAL", "real": "REAL", "numeric": "REAL"}


def _value(table: str, col: asyncpg.Record, i: int) -> object:
    """The filler's value for a column of this PostgreSQL type (small for int32 columns)."""
    udt = str(col["udt_name"])
    element = udt.removeprefix("_")  # an array's: its element type
    kind = _KINDS.get(col["data_type"], "TEXT")
    if element in ("int2", "int4", "int8"):
        kind = "INTEGER"
    made = value(table, col["column_name"], kind, col["is_nullable"] == "NO", i)
    if element in ("int2", "int4") and isinstance(made, int):
        made %= 10_000
    if element == "bool":
        made = None if made is None else i % 2 == 0
    return [made] if udt.startswith("_") and made is not None else made


async def _fill_every_table(conn: asyncpg.Connection) -> list[str]:
    """Two rows in each table but `storage_schema` (identity columns take their sequence's
    next value); the tables filled."""
    columns = await conn.fetch(
        "SELECT c.table_name, c.column_name, c.data_type, c.udt_name, c.is_nullable, c.is_identity "
        "FROM information_schema.columns c JOIN information_schema.tables t "
        "ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
        "WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' "
        "AND c.table_name <> 'storage_schema' ORDER BY c.table_name, c.ordinal_position"
    )
    tables: dict[str, list[asyncpg.Record]] = {}
    for col in columns:
        tables.setdefault(col["table_name"], []).append(col)
    for table, cols in tables.items():
        cols = [c for c in cols if c["is_identity"] != "YES"]
        names = ", ".join(f'"{c["column_name"]}"' for c in cols)
        marks = ", ".join(f"${i + 1}" for i in range(len(cols)))
        for i in range(2):
            row = [_value(table, c, i) for c in cols]
            await conn.execute(f'INSERT INTO "{table}" ({names}) VALUES ({marks})', *row)
    return sorted(tables)


async def test_a_reset_database_has_no_row_and_every_sequence_at_its_start(
    pg_server: PgServer,
) -> None:
    name = await conftest._take_empty(pg_server)
    url = pg_server.url(name)
    db = await PostgresDatabase.open(url)
    await db.migrate(MIGRATIONS)
    await db.aclose()
    conftest._fresh.setdefault(pg_server.port, await conftest._fingerprint(url))
    conn = await asyncpg.connect(url)
    try:
        filled = await _fill_every_table(conn)
        sequences = [
            r[0]
            for r in await conn.fetch(
                "SELECT format('%I.%I', schemaname, sequencename) FROM pg_sequences "
                "WHERE schemaname = 'public'"
            )
        ]
        for seq in sequences:
            await conn.fetchval(f"SELECT nextval('{seq}')")
        counts = [await conn.fetchval(f'SELECT count(*) FROM "{t}"') for t in filled]
    finally:
        await conn.close()
    assert len(filled) > 30 and all(n == 2 for n in counts), (filled, counts)
    assert sequences, "the schema has identity columns: their sequences are checked"

    assert await conftest._reset(pg_server, name)

    conn = await asyncpg.connect(url)
    try:
        left = {t: await conn.fetchval(f'SELECT count(*) FROM "{t}"') for t in filled}
        called = {s: await conn.fetchval(f"SELECT is_called FROM {s}") for s in sequences}
        fingerprint = await conn.fetchval(conftest._FINGERPRINT)
    finally:
        await conn.close()
    assert {t: n for t, n in left.items() if n} == {}
    assert {s for s, was in called.items() if was} == set()
    assert fingerprint == conftest._fresh[pg_server.port]
    await conftest._give_back(pg_server, name)
