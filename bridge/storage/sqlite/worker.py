"""One sqlite3 connection on a thread of its own: jobs run there, one at a time, in order.

The event loop only puts a job on a queue and awaits a future the thread
settles, so a slow statement never stalls the loop. A job is a function of
the connection; it runs to its end even when the awaiting task is cancelled
(a connection cannot be left half-way), and jobs run in the order they were
queued. sqlite3's exceptions become `bridge.storage.errors` ones on the thread.
`Together` jobs (units) queued back to back run as one transaction, each caller
told after its commit (`bridge.storage.sqlite.group`).

`try_inline` is the short way for a read: when no job is queued or running
(so the order of jobs holds), it runs the job on the caller's thread under
a budget of SQLite virtual-machine steps (a progress handler); a read that
would take longer is interrupted, which leaves nothing behind, and the
caller queues it as usual. A point select then costs microseconds instead
of two thread wake-ups (about 0.1-0.4 ms here), and no read holds the event
loop for longer than its budget (plus the pages it reads from the OS cache).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import queue
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

from bridge.storage.errors import IntegrityError, StorageError
from bridge.storage.sqlite.engine import BUSY_MS
from bridge.storage.sqlite.group import MAX_UNITS, Together, run_group

T = TypeVar("T")
Job = tuple[Callable[[sqlite3.Connection], Any], asyncio.AbstractEventLoop, asyncio.Future[Any]]


def _settle(fut: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if fut.done():
        return  # the awaiting task was cancelled; the job ran all the same
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(value)


def _settle_all(told: list[tuple[asyncio.Future[Any], bool, Any]]) -> None:
    for fut, ok, value in told:
        _settle(fut, ok, value)


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


# Progress-handler period (VM steps) and how many periods an inline read may use:
# about 8,000 steps, some tens of microseconds; a point select takes a few dozen.
INLINE_PERIOD = 1000
INLINE_PERIODS = 8


def _busy(exc: sqlite3.OperationalError) -> bool:
    """SQLITE_BUSY / SQLITE_LOCKED: another connection holds the lock."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (5, 6)
    return "locked" in str(exc)


class _Budget:
    """The progress handler of an inline read: stop it after `periods` calls."""

    __slots__ = ("left",)

    def __init__(self, periods: int) -> None:
        self.left = periods

    def __call__(self) -> int:
        self.left -= 1
        return 1 if self.left < 0 else 0


def fresh_budget(conn: sqlite3.Connection) -> None:
    """An inline job's budget from now on (`Worker.try_inline`); a job of several units sets
    each its own, so a long one among short ones is cut as it would be alone."""
    conn.set_progress_handler(_Budget(INLINE_PERIODS), INLINE_PERIOD)


class Worker:
    def __init__(
        self, connect: Callable[[], sqlite3.Connection], name: str, *, idle_busy_ms: int = BUSY_MS
    ) -> None:
        self._connect = connect
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        # jobs queued (written by the loop's thread only) and jobs ended (by the worker's
        # thread only): equal means the thread is idle with nothing queued
        self._queued = 0
        self._ended = 0
        self.inlined = 0  # jobs answered by try_inline (for benches and tests)
        self.inlined_writes = 0  # of them, the writes (each a commit)
        self.grouped = 0  # jobs that shared the commit of the job before them (`Together`)
        self._ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._conn: sqlite3.Connection | None = None
        # the connection's busy_timeout now: BUSY_MS for a job on the thread, `idle_busy_ms`
        # while the thread is idle (an inline job's: the writer's 0, never waiting for
        # another connection's lock on the loop). The thread sets both, before its job
        # and after the last one queued, so the loop's inline jobs run no PRAGMA (each
        # one is a statement, about 7 us); set only when it changes.
        self._busy_ms = BUSY_MS
        self._idle_ms = idle_busy_ms

    def _wait_ms(self, conn: sqlite3.Connection, ms: int) -> None:
        if self._busy_ms != ms:
            conn.execute(f"PRAGMA busy_timeout={ms}")
            self._busy_ms = ms

    async def start(self) -> None:
        self._thread.start()
        await asyncio.wrap_future(self._ready)

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await self.submit(fn)

    def submit(self, fn: Callable[[sqlite3.Connection], T]) -> asyncio.Future[T]:
        """Queue `fn` now (it runs after every job queued before it) and return the future
        of its result, for the caller to await when it likes."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        self._queued += 1
        self._jobs.put((fn, loop, fut))
        return fut

    def idle(self) -> bool:
        """No job queued or running and no transaction open: `try_inline` would run."""
        conn = self._conn
        return conn is not None and self._queued == self._ended and not conn.in_transaction

    def try_inline(
        self, fn: Callable[[sqlite3.Connection], T], *, write: bool = False
    ) -> tuple[bool, T | None]:
        """(True, result) when `fn` ran here within its budget; (False, None) when the
        thread is busy or `fn` needed more (then nothing of it is left: `run` it).

        Only for a `fn` of ONE statement outside any transaction (an interrupted
        statement leaves nothing behind: SQLite undoes it; in autocommit that ends its
        implicit transaction), or of one whole transaction it opens itself (cut short,
        it is rolled back here), so it can be run again on the thread. It waits for
        another connection's lock only as long as the idle connection's busy_timeout
        (`idle_busy_ms`: the writer's is 0); busy, it goes to the thread, which waits.
        `write`: counted in `inlined_writes` too. Several units that would each run inline,
        run as one job, give each its own budget (`fresh_budget` before each)."""
        conn = self._conn
        if conn is None or self._queued != self._ended or conn.in_transaction:
            return False, None
        if self._busy_ms != self._idle_ms:  # the thread leaves it so; this is the first job
            self._wait_ms(conn, self._idle_ms)
        fresh_budget(conn)
        try:
            value = fn(conn)
        except sqlite3.Error as exc:
            conn.set_progress_handler(None, 0)
            if conn.in_transaction:  # a transaction of fn's cut short: nothing of it stays
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError) and (
                str(exc) == "interrupted" or _busy(exc)
            ):
                return False, None
            raise converted(exc)  # noqa: B904 - converted() sets sqlite3's as the cause
        except BaseException:  # not SQLite's (a bound int too big, say): none of fn stays
            conn.set_progress_handler(None, 0)
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        finally:
            conn.set_progress_handler(None, 0)
        self.inlined += 1
        self.inlined_writes += write
        return True, value

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
        self._queued += 1  # never settled: no read runs inline on a closing connection
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
            job = self._jobs.get()
            while job is not None:
                fn, loop, fut = job
                if isinstance(fn, Together):
                    job = self._together(conn, job)
                    continue
                try:
                    self._wait_ms(conn, BUSY_MS)
                    ok, value = True, fn(conn)
                    if self._jobs.empty() and not conn.in_transaction:
                        self._wait_ms(conn, self._idle_ms)  # before `try_inline` may run
                except BaseException as exc:
                    ok, value = False, converted(exc)
                self._ended += 1
                with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits
                    loop.call_soon_threadsafe(_settle, fut, ok, value)
                job = self._jobs.get()
        finally:
            self._conn = None
            conn.close()

    def _together(self, conn: sqlite3.Connection, first: Job) -> Job | None:
        """`first` (a `Together` job) and the `Together` jobs queued right after it of the
        same loop, committed together (`group.run_group`); each caller told after the
        commit, all in one call on the loop. The next job to run (taken off the queue to
        see it was not one of them), or None to stop."""
        group, loop = [first], first[1]
        while len(group) < MAX_UNITS:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is None or not isinstance(job[0], Together) or job[1] is not loop:
                self._run_group(conn, group)
                return job
            group.append(job)
        self._run_group(conn, group)
        return self._jobs.get()

    def _run_group(self, conn: sqlite3.Connection, group: list[Job]) -> None:
        units = [cast(Together, job[0]).make for job in group]
        try:
            self._wait_ms(conn, BUSY_MS)
            outcomes, shared = run_group(conn, units)
            if self._jobs.empty() and not conn.in_transaction:
                self._wait_ms(conn, self._idle_ms)
        except BaseException as exc:  # not one of the units': everyone's
            outcomes, shared = [(False, exc)] * len(group), False
        told = [
            (job[2], ok, value if ok else converted(value))
            for job, (ok, value) in zip(group, outcomes, strict=True)
        ]
        self._ended += len(group)
        self.grouped += (len(group) - 1) * shared
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits
            group[0][1].call_soon_threadsafe(_settle_all, told)
