"""Copy one `Database`'s machine state into another and verify it (`roost db migrate`).

What is copied: every table `source.tables()` finds (the schema's tables;
the engine's own `storage_*` are left out) and every text index
(`text_indexes`: each document added again from its terms). The target is
migrated to the source's schema version when it is empty (version 0) and
refused at any other version.

Resumable per table, by replacement: a table is copied in ONE transaction
of the target — its rows deleted, the source's inserted in batches — so a
copy killed mid-way leaves each table either whole or as it was (the
server rolls the open transaction back). Every run first compares each
table's count and hash on both sides and copies only the tables that
differ; running it again after a kill copies what is missing and
verifies the rest. A text index (one per name and tenant) is copied the
same way, dropped and filled in one transaction.

Verification: per table the number of rows and an order-independent hash
(`Tally`: the sum mod 2**128 of a SHA-256 of each row's canonical
encoding; an integral float counts as the int, as SQLite stores it), both
computed from the rows as read back from each side.

The marker `storage_copy` (one row, written in the target) says a copy
started and whether it finished. A target with rows and no marker is
refused (it holds data no copy put there), and so is one where a live
`[cluster] instance` lease says an instance serves from it. After a
finished copy (`done`) a run only verifies (and copies again only the
tables named in `refresh`); after one from an online snapshot
(`snapshot`), a run copies again the tables that changed.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bridge.storage import fts
from bridge.storage.errors import StorageError
from bridge.storage.migrations import Migration
from bridge.storage.protocol import Database, Row
from bridge.storage.schema import IDENTITY_TABLES

BATCH = 1000
MASK = (1 << 128) - 1
MIN_DOC = -(2**63)
MARKER = """
CREATE TABLE IF NOT EXISTS storage_copy (
    id INTEGER PRIMARY KEY CHECK (id = 1), source TEXT NOT NULL, state TEXT NOT NULL,
    started_ms BIGINT NOT NULL, updated_ms BIGINT NOT NULL)
"""
COPYING, SNAPSHOT, DONE = "copying", "snapshot", "done"
Progress = Callable[[str], None]


class CopyRefused(StorageError):
    """The target cannot take this copy; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class Tally:
    """How many rows, and the order-independent hash of them."""

    rows: int = 0
    digest: int = 0

    def add(self, encoded: bytes) -> Tally:
        h = int.from_bytes(hashlib.sha256(encoded).digest()[:16], "big")
        return Tally(self.rows + 1, (self.digest + h) & MASK)

    def __add__(self, other: Tally) -> Tally:
        return Tally(self.rows + other.rows, (self.digest + other.digest) & MASK)

    def short(self) -> str:
        return f"{self.digest:032x}"[:12]


@dataclass(frozen=True, slots=True)
class Check:
    """One table (or `text:NAME`, a text index over all tenants) on both sides."""

    name: str
    source: Tally
    target: Tally
    copied: bool  # False: it was equal already (or this run only verified)

    @property
    def ok(self) -> bool:
        return self.source == self.target


def encode(row: Sequence[Any]) -> bytes:
    """A row's canonical bytes: the same values give the same bytes on either backend."""
    out = bytearray()
    for v in row:
        if v is None:
            out += b"n;"
        elif isinstance(v, bool | int):
            out += b"i%d;" % v
        elif isinstance(v, float):
            out += b"i%d;" % int(v) if v.is_integer() else b"f" + repr(v).encode() + b";"
        elif isinstance(v, str):
            data = v.encode("utf-8", "surrogatepass")
            out += b"s%d:" % len(data) + data
        elif isinstance(v, bytes | bytearray | memoryview):
            data = bytes(v)
            out += b"b%d:" % len(data) + data
        else:
            raise StorageError(f"a value of type {type(v).__name__} cannot be compared")
    return bytes(out)


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


async def key_columns(db: Database, table: str) -> list[str]:
    """The primary key's columns of `table`, in key order (empty: it has none)."""
    if db.dialect.name == "sqlite":
        sql = "SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk"
    else:
        sql = (
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a "
            "ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
            "WHERE i.indrelid = CAST(CAST(? AS TEXT) AS regclass) AND i.indisprimary "
            "ORDER BY array_position(CAST(i.indkey AS SMALLINT[]), a.attnum)"
        )
    return [str(r[0]) for r in await db.fetch_all(sql, (table,))]


async def pages(
    db: Database, table: str, columns: Sequence[str], batch: int
) -> AsyncIterator[list[Row]]:
    """The rows of `table` (these columns, in this order) in batches, by primary key
    (a keyset: each page one indexed range read); a table without one in one page."""
    cols = ", ".join(_q(c) for c in columns)
    keys = await key_columns(db, table)
    if not keys:
        yield await db.fetch_all(f"SELECT {cols} FROM {_q(table)}")
        return
    order = ", ".join(_q(k) for k in keys)
    at = [list(columns).index(k) for k in keys]
    first = f"SELECT {cols} FROM {_q(table)} ORDER BY {order} LIMIT ?"
    after = (
        f"SELECT {cols} FROM {_q(table)} WHERE ({order}) > ({', '.join('?' * len(keys))}) "
        f"ORDER BY {order} LIMIT ?"
    )
    last: tuple[Any, ...] | None = None
    while True:
        if last is None:
            rows = await db.fetch_all(first, (batch,))
        else:
            rows = await db.fetch_all(after, (*last, batch))
        if rows:
            yield rows
        if len(rows) < batch:
            return
        last = tuple(rows[-1][i] for i in at)


async def tally(db: Database, table: str, columns: Sequence[str], batch: int = BATCH) -> Tally:
    t = Tally()
    async for rows in pages(db, table, columns, batch):
        for row in rows:
            t = t.add(encode(row))
    return t


async def _docs(
    db: Database, name: str, tenant: str, batch: int
) -> AsyncIterator[list[tuple[int, str]]]:
    index = db.text_index(name, tenant)
    after = MIN_DOC
    while True:
        got = await index.documents(after, batch)
        if got:
            yield got
        if len(got) < batch:
            return
        after = got[-1][0]


def _doc_bytes(tenant: str, doc: int, text: str) -> bytes:
    terms, tfs, _ = fts.counted(text)
    return encode((tenant, doc, *sorted(f"{t}\0{n}" for t, n in zip(terms, tfs, strict=True))))


async def text_tally(db: Database, name: str, tenant: str, batch: int = BATCH) -> Tally:
    t = Tally()
    async for docs in _docs(db, name, tenant, batch):
        for doc, text in docs:
            t = t.add(_doc_bytes(tenant, doc, text))
    return t


# -- the target's state -------------------------------------------------------------------


async def marker(db: Database) -> str | None:
    """The state of the copy into `db` (None: no copy ever started there)."""
    try:
        got = await db.fetch_value("SELECT state FROM storage_copy WHERE id = 1")
    except StorageError:
        return None  # no marker table: no copy
    return None if got is None else str(got)


async def set_marker(db: Database, source: str, state: str) -> None:
    await db.execute(MARKER)
    now = await db.now_ms()
    await db.execute(
        "INSERT INTO storage_copy (id, source, state, started_ms, updated_ms) "
        "VALUES (1, :source, :state, :now, :now) ON CONFLICT (id) DO UPDATE SET "
        "source = excluded.source, state = excluded.state, updated_ms = excluded.updated_ms",
        {"source": source, "state": state, "now": now},
    )


async def live_instances(db: Database) -> list[str]:
    """`[cluster] instance` names whose lease is live on `db` (an instance serves)."""
    try:
        now = await db.now_ms()
        rows = await db.fetch_all(
            "SELECT name FROM storage_leases WHERE name LIKE 'instance:%' AND expires_ms > ?",
            (now,),
        )
    except StorageError:
        return []
    return sorted(str(r[0]).removeprefix("instance:") for r in rows)


async def row_counts(db: Database) -> dict[str, int]:
    """Rows per table (the dry run; an unmigrated database has none)."""
    return {
        t: int(await db.fetch_value(f"SELECT count(*) FROM {_q(t)}"))
        for t in sorted(await db.tables())
    }


async def _target_holds_data(target: Database) -> list[str]:
    held = [t for t, n in (await row_counts(target)).items() if n]
    for name, tenant in await target.text_indexes():
        if await target.text_index(name, tenant).count():
            held.append(f"text:{name}")
    return sorted(set(held))


async def prepare(
    source: Database, target: Database, migrations: Sequence[Migration]
) -> str | None:
    """Check the target may take this copy, migrate it when empty; the marker's state
    before this run (None: a new copy). CopyRefused says why not."""
    version = await source.version()
    if version != len(migrations):
        raise CopyRefused(
            f"the home's roost.db is at schema version {version}, this roost at "
            f"{len(migrations)}: start this roost once on the home first (it migrates)"
        )
    at = await target.version()
    if at == 0:
        await target.migrate(migrations)
    elif at != version:
        raise CopyRefused(
            f"the target database is at schema version {at}, the home at {version}: "
            "copy into an empty database (or one a copy of this roost version started)"
        )
    ours, theirs = set(await source.tables()), set(await target.tables())
    if ours != theirs:
        extra = ", ".join(sorted(theirs - ours)[:5]) or "-"
        lacking = ", ".join(sorted(ours - theirs)[:5]) or "-"
        raise CopyRefused(
            f"the target's tables differ from the home's (not roost's: {extra}; missing: "
            f"{lacking}): copy into an empty database"
        )
    serving = await live_instances(target)
    if serving:
        raise CopyRefused(
            f"instances serve from the target database now ({', '.join(serving)}): "
            "stop them before copying into it"
        )
    state = await marker(target)
    if state is None:
        held = await _target_holds_data(target)
        if held:
            raise CopyRefused(
                f"the target database holds data no copy put there ({', '.join(held[:5])}): "
                "copy into an empty database"
            )
    return state


# -- the copy -----------------------------------------------------------------------------


async def _copy_table(
    source: Database,
    target: Database,
    table: str,
    columns: Sequence[str],
    batch: int,
    progress: Progress,
) -> None:
    cols = ", ".join(_q(c) for c in columns)
    insert = f"INSERT INTO {_q(table)} ({cols}) VALUES ({', '.join('?' * len(columns))})"
    done = 0
    async with target.transaction():
        await target.execute(f"DELETE FROM {_q(table)}")
        async for rows in pages(source, table, columns, batch):
            try:
                await target.execute_many(insert, rows)
            except StorageError as exc:
                raise StorageError(f"table {table}: a row could not be written ({exc})") from exc
            done += len(rows)
            progress(f"copying {table}: {done} rows")
        if table in IDENTITY_TABLES and target.dialect.name == "postgresql":
            # new rows must be numbered past the copied ids (identity BY DEFAULT)
            await target.fetch_value(
                f"SELECT setval(pg_get_serial_sequence(?, 'id'), "
                f"COALESCE((SELECT MAX(id) FROM {_q(table)}), 0) + 1, false)",
                (table,),
            )


async def _copy_text(
    source: Database, target: Database, name: str, tenant: str, batch: int
) -> None:
    index = target.text_index(name, tenant)
    async with target.transaction():
        await index.drop()
        async for docs in _docs(source, name, tenant, batch):
            await index.add_many(docs)


async def copy(
    source: Database,
    target: Database,
    migrations: Sequence[Migration],
    *,
    source_name: str,
    snapshot: bool = False,
    refresh: Sequence[str] = (),
    batch: int = BATCH,
    progress: Progress = lambda line: None,
) -> list[Check]:
    """Copy what differs, then verify everything; the checks, one per table and text
    index name. `snapshot`: the source is an online backup (the marker says so, and a
    later run copies again what changed). `refresh`: tables copied again when they
    differ even after a finished copy (a table roost.db still serves, not yet ported).
    CopyRefused when the target cannot take it."""
    state = await prepare(source, target, migrations)
    writing = state != DONE
    unknown = sorted(set(refresh) - set(await source.tables()))
    if unknown:
        raise CopyRefused(f"--refresh names no table of the home: {', '.join(unknown)}")
    if writing:
        await set_marker(target, source_name, COPYING if state is None else state)
    checks: list[Check] = []
    columns_of = await source.tables()
    for table in sorted(columns_of):
        columns = columns_of[table]
        mine = await tally(source, table, columns, batch)
        theirs = await tally(target, table, columns, batch)
        copied = (writing or table in refresh) and mine != theirs
        if copied:
            await _copy_table(source, target, table, columns, batch, progress)
            theirs = await tally(target, table, columns, batch)
        progress(f"{table}: {mine.rows} rows {'copied' if copied else 'checked'}")
        checks.append(Check(table, mine, theirs, copied))
    checks += await _copy_texts(source, target, batch, writing, progress)
    if writing and all(c.ok for c in checks):
        await set_marker(target, source_name, SNAPSHOT if snapshot else DONE)
    return checks


async def _copy_texts(
    source: Database, target: Database, batch: int, writing: bool, progress: Progress
) -> list[Check]:
    ours = await source.text_indexes()
    theirs = await target.text_indexes()
    mine_by: dict[str, Tally] = {}
    theirs_by: dict[str, Tally] = {}
    copied: set[str] = set()
    for name, tenant in ours:
        mine = await text_tally(source, name, tenant, batch)
        got = await text_tally(target, name, tenant, batch)
        if writing and mine != got:
            await _copy_text(source, target, name, tenant, batch)
            got = await text_tally(target, name, tenant, batch)
            copied.add(name)
        mine_by[name] = mine_by.get(name, Tally()) + mine
        theirs_by[name] = theirs_by.get(name, Tally()) + got
    for name, tenant in sorted(set(theirs) - set(ours)):  # only in the target
        got = await text_tally(target, name, tenant, batch)
        if writing and got.rows:
            await target.text_index(name, tenant).drop()
            copied.add(name)
            got = Tally()
        mine_by.setdefault(name, Tally())
        theirs_by[name] = theirs_by.get(name, Tally()) + got
    checks = []
    for name in sorted(mine_by):
        progress(f"text:{name}: {mine_by[name].rows} documents")
        checks.append(Check(f"text:{name}", mine_by[name], theirs_by[name], name in copied))
    return checks


async def verify(source: Database, target: Database, batch: int = BATCH) -> list[Check]:
    """Compare every table and text index, writing nothing."""
    checks = []
    for table, columns in sorted((await source.tables()).items()):
        mine = await tally(source, table, columns, batch)
        theirs = await tally(target, table, columns, batch)
        checks.append(Check(table, mine, theirs, False))
    return checks + await _copy_texts(source, target, batch, False, lambda line: None)
