"""Is the server there? Classifying asyncpg's errors, and reconnecting with backoff.

A statement that fails because the connection or the server went away
raises `DatabaseUnavailable` (its transaction, if any, is rolled back by the
server) and starts one background probe: `SELECT 1` on a fresh connection,
retried after 0.05 s, 0.1 s, ... up to `cap_s` between tries. While a probe
has failed, statements fail at once instead of each waiting for a connect
to time out; when it succeeds, `on_up` runs (stale pooled connections are
dropped, listeners come back) and statements go through again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

import asyncpg

from bridge.storage.errors import DatabaseUnavailable, IntegrityError, StorageError
from bridge.storage.url import redact as redact

log = logging.getLogger(__name__)


def is_loss(exc: BaseException) -> bool:
    """True when `exc` says the connection or the server is gone (not the statement)."""
    if isinstance(exc, asyncpg.exceptions.QueryCanceledError):
        return False
    if isinstance(exc, asyncpg.exceptions.InterfaceError) and "closed" in str(exc):
        return True  # "cannot perform operation: connection is closed"
    if isinstance(exc, asyncpg.exceptions.InternalClientError) and "in progress" in str(exc):
        # "cannot switch to state N; another operation (M) is in progress": a connection
        # left mid-operation when the server went away; it cannot be used again
        return True
    return isinstance(
        exc,
        OSError
        | TimeoutError
        | asyncpg.exceptions.ConnectionDoesNotExistError
        | asyncpg.exceptions.PostgresConnectionError
        | asyncpg.exceptions.OperatorInterventionError,
    )


def converted(exc: BaseException) -> BaseException:
    """asyncpg's exception as ours. Client-side argument errors lose the value they quote."""
    if isinstance(exc, asyncpg.exceptions.IntegrityConstraintViolationError):
        return IntegrityError(f"{exc.sqlstate}: {exc}")
    if isinstance(exc, asyncpg.exceptions.PostgresError):
        return StorageError(f"{exc.sqlstate}: {exc}")
    if isinstance(exc, asyncpg.exceptions.DataError):
        return StorageError(str(exc).split(":", 1)[0])
    if isinstance(exc, asyncpg.exceptions.InterfaceError):
        return StorageError(str(exc))
    return exc


class Health:
    def __init__(
        self,
        probe: Callable[[], Awaitable[None]],
        on_up: Callable[[], Awaitable[None]],
        *,
        first_s: float = 0.05,
        cap_s: float = 5.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._probe, self._on_up, self._sleep = probe, on_up, sleep
        self._first_s, self._cap_s = first_s, cap_s
        self.down = False
        self.tries = 0  # probes that failed since the loss (the backoff's step)
        self.reconnects = 0
        self._task: asyncio.Task[None] | None = None
        self.up = asyncio.Event()
        self.up.set()

    def check(self) -> None:
        if self.down:
            raise DatabaseUnavailable(
                "the database is unreachable (reconnecting in the background)"
            )

    def lost(self) -> None:
        """A statement found the connection gone: probe (once at a time) until it is back."""
        if self._task is None or self._task.done():
            self.up.clear()
            self._task = asyncio.get_running_loop().create_task(self._reconnect())

    async def _reconnect(self) -> None:
        delay, self.tries = self._first_s, 0
        while True:
            try:
                await self._probe()
                break
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.down = True
                self.tries += 1
                if self.tries == 1:
                    log.warning("database unreachable (%s); reconnecting", type(exc).__name__)
                await self._sleep(delay)
                delay = min(delay * 2, self._cap_s)
        was_down, self.down = self.down, False
        self.reconnects += 1
        with contextlib.suppress(Exception):
            await self._on_up()
        if was_down:
            tries = "1 failed try" if self.tries == 1 else f"{self.tries} failed tries"
            log.warning("database reachable again after %s", tries)
        self.up.set()

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
