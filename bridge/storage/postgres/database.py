"""`PostgresDatabase`: the `Database` protocol over an asyncpg pool.

asyncpg was measured against psycopg 3 on our statements (`bench/storage_drivers.py`):
within 0.8-1.3x of each other either way on a busy machine; asyncpg kept
(no libpq). A statement outside a transaction borrows a pooled connection
for itself; `async with db.transaction()` holds one connection for the
block (nested blocks are savepoints). The pool's size bounds how many
statements run at once; a slow one holds only its own connection, so other
chats go on. Rows come back as tuples (numeric as int or float). The server
going away turns statements into `DatabaseUnavailable` and starts the
reconnect in `health`; LISTEN runs on a connection of its own (`listen`).
"""

from __future__ import annotations

import asyncio
import contextlib
import decimal
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeAlias, TypeVar

import asyncpg

from bridge.storage import dialect
from bridge.storage.errors import DatabaseUnavailable, DatabaseUnreachable
from bridge.storage.migrations import Migration
from bridge.storage.notify import Sub, check_topic
from bridge.storage.placeholders import Params, translate
from bridge.storage.postgres import engine
from bridge.storage.postgres.health import Health, converted, is_loss, redact
from bridge.storage.postgres.listen import Listener
from bridge.storage.postgres.text import PostgresTextIndex
from bridge.storage.protocol import Row
from bridge.storage.units import Made, Unit, drive, made

T = TypeVar("T")
Conn: TypeAlias = Any  # asyncpg.Connection (asyncpg ships no type hints)
SERVER_SETTINGS = {"application_name": "roost", "client_connection_check_interval": "2000"}


async def _keep_session(conn: Conn) -> None:
    """The pool's reset on release, beyond asyncpg's own rollback of an open transaction:
    nothing. The default (`RESET ALL; UNLISTEN *; ...`) is one more round trip per
    statement, and nothing here changes a pooled connection's session: LISTEN has its
    own connection, migrations take transaction-scoped advisory locks."""


def _plain(value: Any) -> Any:
    if type(value) is decimal.Decimal:
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def _row(record: Any) -> Row:
    return tuple(_plain(v) for v in record)


def _count(status: str) -> int:
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0


class PostgresDatabase:
    dialect = dialect.POSTGRESQL

    def __init__(self, url: str, pool: asyncpg.Pool, *, acquire_s: float = 60.0) -> None:
        self._url, self._pool, self._acquire_s = url, pool, acquire_s
        self._tx: ContextVar[Conn | None] = ContextVar(f"pg-tx-{id(self)}", default=None)
        self.health = Health(self._probe, self._back_up)
        self._listener = Listener(url, SERVER_SETTINGS, self.health)

    @classmethod
    async def open(
        cls, url: str, *, pool_size: int = 10, connect_timeout_s: float = 10.0
    ) -> PostgresDatabase:
        """Connect a pool; DatabaseUnreachable (naming `database.url`) when that fails."""
        try:
            pool = await asyncpg.create_pool(
                url,
                min_size=1,
                max_size=max(pool_size, 1),
                timeout=connect_timeout_s,
                server_settings=SERVER_SETTINGS,
                reset=_keep_session,
            )
        except Exception as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise DatabaseUnreachable(
                f"database.url: cannot reach PostgreSQL at {redact(url)} ({reason})"
            ) from None
        return cls(url, pool)

    # -- running ------------------------------------------------------------------------

    async def call(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """Run `fn` on this task's transaction's connection, else on a pooled one."""
        conn = self._tx.get()
        try:
            if conn is not None:
                return await fn(conn)
            self.health.check()
            async with self._pool.acquire(timeout=self._acquire_s) as pooled:
                return await fn(pooled)
        except asyncio.CancelledError:
            raise
        except DatabaseUnavailable:
            raise
        except Exception as exc:
            raise self._converted(exc) from None

    def _converted(self, exc: BaseException) -> BaseException:
        if is_loss(exc):
            self.health.lost()
            return DatabaseUnavailable(
                f"lost the connection to the database ({type(exc).__name__}); the statement "
                "did not happen and its transaction was rolled back"
            )
        return converted(exc)

    async def _probe(self) -> None:
        conn = await asyncpg.connect(self._url, timeout=10.0, server_settings=SERVER_SETTINGS)
        try:
            await conn.fetchval("SELECT 1")
        finally:
            await conn.close()

    async def _back_up(self) -> None:
        await self._pool.expire_connections()  # pooled ones may point at the old server process
        await self._listener.restart()

    # -- statements ---------------------------------------------------------------------

    async def execute(self, sql: str, params: Params = None) -> int:
        text, args = translate(sql, params, "numeric")
        return _count(await self.call(lambda c: c.execute(text, *args)))

    async def execute_many(self, sql: str, rows: Iterable[Params]) -> None:
        values = [translate(sql, p, "numeric") for p in rows]
        if values:
            text = values[0][0]
            await self.call(lambda c: c.executemany(text, [v for _, v in values]))

    async def fetch_all(self, sql: str, params: Params = None) -> list[Row]:
        text, args = translate(sql, params, "numeric")
        return [_row(r) for r in await self.call(lambda c: c.fetch(text, *args))]

    async def fetch_one(self, sql: str, params: Params = None) -> Row | None:
        text, args = translate(sql, params, "numeric")
        record = await self.call(lambda c: c.fetchrow(text, *args))
        return None if record is None else _row(record)

    async def fetch_value(self, sql: str, params: Params = None) -> Any:
        text, args = translate(sql, params, "numeric")
        return _plain(await self.call(lambda c: c.fetchval(text, *args)))

    # -- transactions -------------------------------------------------------------------

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        conn = self._tx.get()
        if conn is not None:
            async with self._block(conn):  # asyncpg makes a nested one a savepoint
                yield
            return
        self.health.check()
        pooled = await self._driver(self._pool.acquire(timeout=self._acquire_s))
        try:
            token = self._tx.set(pooled)
            try:
                async with self._block(pooled):
                    yield
            finally:
                self._tx.reset(token)
        finally:
            await self._pool.release(pooled)

    async def atomic(self, unit: Unit[T] | Made[T]) -> T:
        """The unit's steps in one transaction (a round trip each)."""
        async with self.transaction():
            return await drive(self, made(unit))

    @asynccontextmanager
    async def _block(self, conn: Conn) -> AsyncIterator[None]:
        tr = conn.transaction()
        await self._driver(tr.start())
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):  # a lost connection: the server rolled back
                await tr.rollback()
            raise
        await self._driver(tr.commit())

    async def _driver(self, step: Awaitable[T]) -> T:
        """Await a driver call (BEGIN, COMMIT, acquire), its errors as ours."""
        try:
            return await step
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise self._converted(exc) from None

    # -- schema and the rest ------------------------------------------------------------

    async def migrate(self, migrations: Sequence[Migration]) -> int:
        return await self.call(lambda c: engine.migrate(c, migrations))

    async def version(self) -> int:
        return await self.call(engine.version)

    async def tables(self) -> dict[str, tuple[str, ...]]:
        return await self.call(engine.table_columns)

    def text_index(self, name: str, tenant: str) -> PostgresTextIndex:
        return PostgresTextIndex(self, name, tenant)

    async def text_index_names(self, tenant: str) -> list[str]:
        rows = await self.fetch_all(
            "SELECT name FROM storage_fts_stats WHERE tenant = ? ORDER BY name", (tenant,)
        )
        return [str(r[0]) for r in rows]

    async def text_indexes(self) -> list[tuple[str, str]]:
        rows = await self.fetch_all(
            "SELECT name, tenant FROM storage_fts_stats ORDER BY name, tenant"
        )
        return [(str(n), str(t)) for n, t in rows]

    async def backup(self, dest: Path) -> None:
        await engine.dump(self._url, dest)

    async def now_ms(self) -> int:
        return int(await self.fetch_value(f"SELECT {self.dialect.now_ms}"))

    async def notify(self, topic: str) -> None:
        await self.execute("SELECT pg_notify(?, '')", (Listener.channel(check_topic(topic)),))

    def subscribe(self, topic: str) -> Sub:
        return self._listener.hub.add(topic)

    async def aclose(self) -> None:
        await self.health.aclose()
        await self._listener.aclose()
        await self._pool.close()
