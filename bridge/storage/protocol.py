"""The `Database` protocol every store is written against, and what it hands back.

Statements use one placeholder style (`?` with a sequence, or `:name` with
a mapping: `bridge.storage.placeholders`); rows come back as plain tuples of
int, float, str, bytes or None. No driver type crosses this line.

Transactions: `async with db.transaction():` — every statement the same task
runs inside goes to one connection; an exception rolls it back, leaving the
block commits it. Nested blocks are savepoints: an exception in the inner
block undoes the inner block only (if it is caught). A statement outside any
block commits on its own. Do not start tasks inside a block that use the
database: they would share the transaction's connection. `db.atomic(unit)`
runs a few statements written as a generator (`bridge.storage.units`) as one
transaction; on SQLite in one job on the writer's thread.

Change notification: `db.notify(topic)` (inside a transaction: delivered when
it commits; on its own: at once) wakes every `db.subscribe(topic)` of every
process on the same database — SQLite polls `PRAGMA data_version`, PostgreSQL
uses LISTEN/NOTIFY. A subscriber may wake without a change (a reconnect, a
coalesced burst); it never misses a notify committed after it subscribed.

Text search (`db.text_index(name, tenant)`): documents are the caller's
integer ids with a text; `bridge.storage.fts` fixes the terms, the escaping
and the ranking both backends share.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Protocol, TypeVar

from bridge.storage.dialect import Dialect
from bridge.storage.migrations import Migration
from bridge.storage.placeholders import Params
from bridge.storage.units import Made, Unit

Row = tuple[Any, ...]
T = TypeVar("T")


class Subscription(Protocol):
    """Notifications of one topic, from `subscribe` until `close` (or the `async with`)."""

    async def wait(self) -> None:
        """Return once a notify of the topic arrived since the last `wait` (or since
        subscribing); at once if one already did."""
        ...

    def close(self) -> None: ...

    async def __aenter__(self) -> Subscription: ...

    async def __aexit__(self, *exc: object) -> None: ...


class TextIndex(Protocol):
    """One tenant's documents in one named full-text index (`bridge.storage.fts`)."""

    async def add(self, doc: int, text: str) -> None:
        """Index `text` as document `doc` (IntegrityError when `doc` is indexed already)."""
        ...

    async def add_many(self, docs: Sequence[tuple[int, str]]) -> None:
        """Index (doc, text) pairs in one step (one writer job on SQLite, one `executemany`
        on PostgreSQL); IntegrityError when one is indexed already (those before it may
        stay added)."""
        ...

    def adding(self, docs: Sequence[tuple[int, str]]) -> Unit[None]:
        """The steps that index (doc, text) pairs, as part of the caller's unit
        (`Database.atomic`): they commit together with the caller's other steps, or none
        of them does (IntegrityError when one is indexed already)."""
        ...

    async def remove(self, doc: int) -> bool: ...

    async def search(
        self, query: Sequence[str], limit: int, *, min_doc: int | None = None
    ) -> list[tuple[int, float]]:
        """(doc, score) of the best `limit` documents holding any query term, best first;
        only documents >= `min_doc` when given."""
        ...

    async def doc_freq(self, query: Sequence[str], cap: int) -> dict[str, int]:
        """Per query term (as `fts.query_terms` gives them), how many documents hold it,
        counted up to `cap`."""
        ...

    async def nth_newest(self, query: Sequence[str], n: int) -> int | None:
        """The id of the `n`-th largest document holding any query term (None: fewer)."""
        ...

    async def count(self) -> int: ...

    async def count_with(self, sql: str, params: Sequence[object]) -> tuple[int, int]:
        """(the documents, the value of `sql`: a scalar query with `?` placeholders) read
        in ONE statement, so from one snapshot: two reads would let another process's
        write land between them (a table's rows counted against the documents)."""
        ...

    async def drop(self) -> None:
        """Remove the tenant's whole index (forget)."""
        ...

    async def documents(self, after: int, limit: int) -> list[tuple[int, str]]:
        """(doc, its terms joined by spaces) of the first `limit` documents above `after`,
        by id (a copy to another database: `add` of the text indexes the same terms)."""
        ...


class Database(Protocol):
    dialect: Dialect

    async def execute(self, sql: str, params: Params = None) -> int:
        """Run one statement; the number of rows it changed (0 for DDL)."""
        ...

    async def execute_many(self, sql: str, rows: Iterable[Params]) -> None: ...

    async def fetch_one(self, sql: str, params: Params = None) -> Row | None: ...

    async def fetch_all(self, sql: str, params: Params = None) -> list[Row]: ...

    async def fetch_value(self, sql: str, params: Params = None) -> Any:
        """The first column of the first row; None when there is no row."""
        ...

    def transaction(self) -> AbstractAsyncContextManager[None]: ...

    async def atomic(self, unit: Unit[T] | Made[T]) -> T:
        """Run the statements `unit` yields in one transaction (`bridge.storage.units`):
        on SQLite as one job on the writer, never a transaction held across an await
        (given the function that makes it, on the caller's thread when short)."""
        ...

    async def migrate(self, migrations: Sequence[Migration]) -> int:
        """Create the engine's own tables, run the steps not run yet; the version after."""
        ...

    async def version(self) -> int: ...

    async def notify(self, topic: str) -> None: ...

    def subscribe(self, topic: str) -> Subscription: ...

    async def tables(self) -> dict[str, tuple[str, ...]]:
        """Every table of the schema (the engine's own `storage_*` left out) -> its columns."""
        ...

    def text_index(self, name: str, tenant: str) -> TextIndex: ...

    async def text_index_names(self, tenant: str) -> list[str]:
        """The names of the text indexes that hold documents of `tenant` (forget)."""
        ...

    async def text_indexes(self) -> list[tuple[str, str]]:
        """(name, tenant) of every text index that was written, sorted (a copy)."""
        ...

    async def backup(self, dest: Path) -> None:
        """A consistent copy into the file `dest` (0600), written atomically."""
        ...

    async def now_ms(self) -> int:
        """The database's clock, ms since the epoch."""
        ...

    async def aclose(self) -> None: ...
