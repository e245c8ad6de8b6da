"""One sqlite3 connection on a thread of its own: jobs run there, one at a time, in order.

The event loop only puts a job on a queue and awaits a future the thread
settles, so a slow statement never stalls the loop. A job is a function of
the connection; it runs to its end even when the awaiting task is cancelled
(a connection cannot be left half-way), and jobs run in the order they were
queued. sqlite3's exceptions become `bridge.storage.errors` ones on the thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import queue
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from bridge.storage.errors import IntegrityError, StorageError

T = TypeVar("T")
Job = tuple[Callable[[sqlite3.Connection], Any], asyncio.AbstractEventLoop, asyncio.Future[Any]]


def _settle(fut: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if fut.done():
        return  # the awaiting task was cancelled; the job ran all the same
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(value)


def converted(exc: BaseException) -> BaseException:
    """sqlite3's exception as ours (message kept: SQLite's says what and where, no values),
    raised from it: whoever asks what it was (`bridge.core.diskfull`: SQLITE_FULL) finds
    sqlite3's as the cause."""
    if isinstance(exc, sqlite3.IntegrityError):
        ours: BaseException = IntegrityError(str(exc))
    elif isinstance(exc, sqlite3.Error):
        ours = StorageError(str(exc))
    else:
        return exc
    ours.__cause__ = exc
    return ours


class Worker:
    def __init__(self, connect: Callable[[], sqlite3.Connection], name: str) -> None:
        self._connect = connect
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._conn: sqlite3.Connection | None = None

    async def start(self) -> None:
        self._thread.start()
        await asyncio.wrap_future(self._ready)

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        self._jobs.put((fn, loop, fut))
        return await fut

    async def run_to_end(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """`run`, waiting for the job's end even if cancelled meanwhile (BEGIN, COMMIT,
        ROLLBACK: the caller must know the connection's state before it lets go)."""
        task = asyncio.ensure_future(self.run(fn))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.done():
                await asyncio.wait([task])
            raise

    def interrupt(self) -> None:
        """Abort the statement running now (sqlite3 allows this from another thread)."""
        if self._conn is not None:
            self._conn.interrupt()

    async def stop(self) -> None:
        if not self._thread.is_alive():
            return
        self._jobs.put(None)
        await asyncio.to_thread(self._thread.join)

    def _main(self) -> None:
        try:
            conn = self._connect()
        except BaseException as exc:  # the opener's error goes to whoever awaits start()
            with contextlib.suppress(concurrent.futures.InvalidStateError):  # start() cancelled
                self._ready.set_exception(converted(exc))
            return
        self._conn = conn
        # a cancelled start() cancelled this future; the thread serves (and stops) all the same
        with contextlib.suppress(concurrent.futures.InvalidStateError):
            self._ready.set_result(None)
        try:
            while (job := self._jobs.get()) is not None:
                fn, loop, fut = job
                try:
                    ok, value = True, fn(conn)
                except BaseException as exc:
                    ok, value = False, converted(exc)
                with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits
                    loop.call_soon_threadsafe(_settle, fut, ok, value)
        finally:
            self._conn = None
            conn.close()
