"""`SqliteDatabase`: the `Database` protocol over one SQLite file, off the event loop.

One writer connection on its own thread takes every write and every
transaction, in turn (an asyncio lock: one transaction at a time, as SQLite
allows one writer; a write outside one is queued on the thread once no
other task's transaction is open, and awaited outside the lock, so the
thread runs queued writes back to back; units queued back to back commit
together: `group`); `readers` reader connections (threads, `query_only`)
take plain SELECTs outside a transaction, so a long write does not hold up
reads (WAL); a SELECT that an idle reader answers within a small budget of
SQLite steps is answered on the caller's thread, without the two thread
wake-ups (`Worker.try_inline`; a longer one is interrupted and queued); so
is a single writing statement outside any transaction when the writer is
idle (busy with another connection's lock, it is queued too), in a
transaction of its own (`_alone`: a budget that cuts a statement as it
returns, its work done, must not make it run twice), and so is a unit given
as the function that makes it (a turn's end); the units given after it in the
same pass of the loop run inline together at that pass's end, one
transaction (`atomic`). The writer
makes no WAL checkpoint inside a commit; every `CHECKPOINT_EVERY` writes
a passive one runs on a connection (and thread) of its own, beside the writer,
then one on the writer's thread copies what was committed meanwhile (so the
WAL is rewound).
`BEGIN IMMEDIATE` starts a transaction; nested ones are savepoints.
Notifications: `storage_notify` counts per topic, written in the notifier's
transaction; a poller connection reads them when `PRAGMA
data_version` says another connection committed (another process, or this
one's writer); this process's own notifies wake at once after commit. The
poller looks every `poll_s` on the loop's thread when its connection is idle
(`Worker.try_inline`), so an idle daemon's looks wake no thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import itertools
import logging
import re
import sqlite3
from collections.abc import AsyncIterator, Callable, Generator, Iterable, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from bridge.storage import dialect
from bridge.storage.migrations import Migration, pending
from bridge.storage.notify import Hub, Sub, check_topic
from bridge.storage.placeholders import Params, translate
from bridge.storage.protocol import Row
from bridge.storage.sqlite import engine
from bridge.storage.sqlite.group import MAX_UNITS, Together
from bridge.storage.sqlite.steps import begin, commit, rollback, run_steps, run_unit
from bridge.storage.sqlite.text import SqliteTextIndex
from bridge.storage.sqlite.worker import Worker, fresh_budget
from bridge.storage.units import Made, Unit, drive, made

T = TypeVar("T")
log = logging.getLogger(__name__)
CHECKPOINT_EVERY = 500  # writes between two passive WAL checkpoints
_READ = re.compile(r"^\s*(SELECT|WITH|VALUES)\b", re.IGNORECASE)
_WRITES = re.compile(r"\b(INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER)\b", re.IGNORECASE)
Conn = sqlite3.Connection


@functools.lru_cache(maxsize=1024)
def _reads_only(sql: str) -> bool:
    """A SELECT (WITH, VALUES) that writes nothing: a reader may run it. Cached: the
    search for a writing keyword reads the whole text (about 20 us for the session
    load's 400 characters, on the event loop for each fetch), and a process runs a
    few hundred distinct texts over and over."""
    return bool(_READ.match(sql)) and not _WRITES.search(sql)


@dataclass
class _Tx:
    depth: int = 0
    topics: set[str] = field(default_factory=set)


def _exec(sql: str, args: tuple[object, ...]) -> Callable[[Conn], int]:
    return lambda c: max(c.execute(sql, args).rowcount, 0)


class SqliteDatabase:
    dialect = dialect.SQLITE

    def __init__(
        self,
        path: Path,
        *,
        readers: int = 2,
        poll_s: float = 0.25,
        on_connect: Callable[[Conn], None] | None = None,
        inline_reads: bool = True,
        inline_writes: bool = True,
    ) -> None:
        self.path = path
        # short statements on the loop's thread (benches turn them off to compare)
        self.inline_reads, self.inline_writes = inline_reads, inline_writes
        self._writes = 0
        self._checkpoint: asyncio.Task[None] | None = None
        self._on_connect = on_connect
        self._writer = Worker(
            engine.opener(path, reader=False, on_connect=on_connect), "db-w", idle_busy_ms=0
        )
        self._readers = [
            Worker(engine.opener(path, reader=True, on_connect=on_connect), f"db-r{i}")
            for i in range(readers)
        ]
        self._next_reader = itertools.cycle(range(max(readers, 1)))
        self._lock = asyncio.Lock()
        self._tx: ContextVar[_Tx | None] = ContextVar(f"sqlite-tx-{id(self)}", default=None)
        self._hub = Hub(on_first=self._start_poller)
        self._poll_s = poll_s
        self._poller: asyncio.Task[None] | None = None
        self._poll_worker: Worker | None = None
        self._checkpointer: Worker | None = None  # started by the first checkpoint
        self._closing = False  # `aclose` began
        # units joined to the pass of the loop that ran one inline, run together at its end
        self._inline_pass = False
        self._inline_task: asyncio.Task[Any] | None = None  # whose unit ran inline last
        self._joined: list[tuple[Made[Any], asyncio.Future[Any]]] = []
        self._orphans: set[asyncio.Task[Any]] = set()  # joined units of cancelled callers
        self.joined = 0  # units that shared the inline commit of the unit before them

    @classmethod
    async def open(cls, path: Path, **options: Any) -> SqliteDatabase:
        """Open (creating, 0600) the file and start the connections' threads."""
        engine.private_file(path)
        db = cls(path, **options)
        await db._writer.start()  # first: it turns WAL on before a reader opens
        await asyncio.gather(*(r.start() for r in db._readers))
        return db

    # -- running jobs -------------------------------------------------------------------

    async def write(self, fn: Callable[[Conn], T]) -> T:
        """Run `fn` on the writer: in this task's transaction, else on its own."""
        if self._tx.get() is not None:
            return await self._writer.run(fn)
        return await self._queue(fn)

    async def _queue(self, fn: Callable[[Conn], T]) -> T:
        """`fn` queued on the writer once no other task's transaction is open, its end
        awaited outside the lock: the writer's queue is in order, so a job queued before
        a BEGIN runs before it, and the next task's job is queued at once. The writer's
        thread runs queued jobs back to back; holding the lock until the job's end made
        it wait between two jobs for the loop to wake the next task (a turn's CPU, about
        1 ms, under load), so its jobs were served at the loop's pace, not the disk's."""
        if not self._lock.locked():
            return await self._writer.submit(fn)
        async with self._lock:
            done = self._writer.submit(fn)
        return await done

    async def read(self, fn: Callable[[Conn], T]) -> T:
        """Run a read-only `fn`: on a reader outside a transaction, else as a write."""
        if self._tx.get() is not None or not self._readers:
            return await self.write(fn)
        return await self._readers[next(self._next_reader)].run(fn)

    # -- statements ---------------------------------------------------------------------

    async def execute(self, sql: str, params: Params = None) -> int:
        text, args = translate(sql, params, "qmark")
        return await self._statement(_exec(text, args))

    async def _statement(self, job: Callable[[Conn], T]) -> T:
        """ONE writing statement: inline on the idle writer when no transaction is open
        (in this task or another) and it is short; else a job on the writer's thread."""
        self._count_write()
        if self.inline_writes and self._tx.get() is None and not self._lock.locked():
            done, value = self._writer.try_inline(functools.partial(_alone, job), write=True)
            if done:
                return value  # type: ignore[return-value]
        return await self.write(job)

    def _count_write(self) -> None:
        """Every CHECKPOINT_EVERY writes, a WAL checkpoint (`_checkpoint_wal`; the writer
        makes none inside its commits: `engine.opener`)."""
        self._writes += 1
        if (
            self._writes % CHECKPOINT_EVERY == 0
            and not self._closing
            and (self._checkpoint is None or self._checkpoint.done())
        ):
            # a context of its own: never inside the transaction of the write that counted
            self._checkpoint = asyncio.get_running_loop().create_task(
                self._checkpoint_wal(), context=contextvars.Context()
            )

    async def _checkpoint_wal(self) -> None:
        """Two passive checkpoints. The bulk on a `query_only` connection and thread of its
        own: it takes no write lock, so it runs beside the writer's transactions, and the
        writes queued meanwhile do not wait for its copy and the file's fsync (on the
        writer, 12-19 ms of wall every 500 writes behind which every turn's end queued).
        Then a top-up on the writer's thread, between its transactions, copying only what
        was committed while the first one copied: SQLite rewinds the WAL only when a write
        begins after a checkpoint copied every frame, which under steady writes the side
        one alone never did (745-805 MB of WAL after 20 s of turns at full speed, against
        52-58 MB with every checkpoint on the writer; session 45's attacker, F1)."""
        try:
            if self._checkpointer is None:
                worker = Worker(
                    engine.opener(self.path, reader=True, on_connect=self._on_connect),
                    "db-ckpt",
                )
                await worker.start()
                if self._closing:  # `aclose` began meanwhile: it stops no worker made now
                    await worker.stop()
                    return
                self._checkpointer = worker
            await self._checkpointer.run(engine.checkpoint)
            # as a write: between transactions (inside one, SQLite refuses: LOCKED)
            await self.write(engine.checkpoint)
        except Exception as exc:  # a full disk, say: the next one tries again
            log.warning("WAL checkpoint failed: %s", exc)

    async def execute_many(self, sql: str, rows: Iterable[Params]) -> None:
        values = [translate(sql, p, "qmark") for p in rows]
        if not values:
            return
        query = values[0][0]
        await self.write(lambda c: c.executemany(query, [v for _, v in values]))

    async def fetch_all(self, sql: str, params: Params = None) -> list[Row]:
        text, args = translate(sql, params, "qmark")
        job: Callable[[Conn], list[Row]] = lambda c: c.execute(text, args).fetchall()  # noqa: E731
        return await self._fetch(sql, job)

    async def fetch_one(self, sql: str, params: Params = None) -> Row | None:
        text, args = translate(sql, params, "qmark")
        job: Callable[[Conn], Row | None] = lambda c: c.execute(text, args).fetchone()  # noqa: E731
        return await self._fetch(sql, job)

    async def _fetch(self, sql: str, job: Callable[[Conn], T]) -> T:
        """A SELECT outside a transaction: inline when it is short (`Worker.try_inline`),
        on the writer's connection when it is idle, else on an idle reader's, else on a
        reader's thread; anything else on the writer. The writer's connection first: its
        page cache holds what it wrote, while a reader's is emptied by every commit of
        another connection (WAL), so its point select re-reads its pages from the files
        (the session load: about 15 us more)."""
        if not _reads_only(sql):
            return await self._statement(job)  # UPDATE ... RETURNING and the like
        if self._tx.get() is not None or not self._readers:
            return await self.write(job)
        reader = self._readers[next(self._next_reader)]
        if self.inline_reads and not self._lock.locked() and self._writer.idle():
            done, value = self._writer.try_inline(job)
            if done:
                return value  # type: ignore[return-value]
            return await reader.run(job)  # too long for the loop (or busy): a thread's
        if self.inline_reads:
            done, value = reader.try_inline(job)
            if done:
                return value  # type: ignore[return-value]
        return await reader.run(job)

    async def fetch_value(self, sql: str, params: Params = None) -> Any:
        row = await self.fetch_one(sql, params)
        return None if row is None else row[0]

    # -- transactions -------------------------------------------------------------------

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        tx = self._tx.get()
        if tx is not None:
            async with self._savepoint(tx):
                yield
            return
        async with self._lock:
            await self._writer.run_to_end(begin)
            tx = _Tx()
            token = self._tx.set(tx)
            try:
                yield
            except BaseException:
                await self._writer.run_to_end(rollback)
                raise
            else:
                try:
                    await self._writer.run_to_end(_commit)
                except BaseException:
                    await self._writer.run_to_end(rollback)
                    raise
            finally:
                self._tx.reset(token)
        for topic in tx.topics:
            self._hub.wake(topic)

    @asynccontextmanager
    async def _savepoint(self, tx: _Tx) -> AsyncIterator[None]:
        name = f"sp{tx.depth}"
        tx.depth += 1
        try:
            await self._writer.run_to_end(lambda c: c.execute(f"SAVEPOINT {name}"))
            try:
                yield
            except BaseException:
                await self._writer.run_to_end(
                    lambda c: (c.execute(f"ROLLBACK TO {name}"), c.execute(f"RELEASE {name}"))
                )
                raise
            await self._writer.run_to_end(lambda c: c.execute(f"RELEASE {name}"))
        finally:
            tx.depth -= 1

    async def atomic(self, unit: Unit[T] | Made[T]) -> T:
        """The unit as ONE job on the writer (BEGIN IMMEDIATE ... COMMIT); inside this
        task's transaction, its steps one by one on it. Given the function that makes
        it, on the caller's thread when the writer is idle and the unit short (like a
        single statement: `_statement`); cut short, it is rolled back and made again for
        the writer's thread; there, committed together with the units queued next to
        it (`bridge.storage.sqlite.group`), each caller told after the commit. Units
        given in a pass of the loop after one ran inline (turns that end together) join
        into ONE inline transaction at the pass's end (`_end_pass`): one BEGIN, one
        COMMIT, their shared pages written once; when that cannot run or fails, nothing
        of it stays and each goes on alone, so each caller gets its own unit's outcome."""
        if self._tx.get() is not None:
            return await drive(self, made(unit))
        self._count_write()
        if isinstance(unit, Generator):
            return await self._queue(functools.partial(run_unit, unit=unit))
        inline = self.inline_writes and not self._lock.locked()
        if (
            inline
            and self._inline_pass
            and self._inline_task is not asyncio.current_task()
            and len(self._joined) < MAX_UNITS
        ):
            # another task's unit ran inline in this pass of the loop: this one joins the
            # units that run together at the pass's end (not run: nothing of them stays, it
            # goes on alone). The same task's next unit would wait for none: it runs now.
            done, value, inline = await self._join(unit)
            if done:
                return value  # type: ignore[return-value]
        if inline and not self._lock.locked():  # (a transaction may have begun meanwhile)
            done, value = self._writer.try_inline(_made_unit(unit), write=True)
            if done:
                self._ran_inline()
                return value  # type: ignore[return-value]
        # on the thread, in one transaction with the units queued next to it (`group`)
        return await self._queue(Together(unit))

    def _ran_inline(self) -> None:
        """A unit ran inline in this pass of the loop: until its end, the next ones of other
        tasks join."""
        self._inline_task = asyncio.current_task()
        if not self._inline_pass:
            self._inline_pass = True
            asyncio.get_running_loop().call_soon(self._end_pass)

    def _join(self, make: Made[T]) -> asyncio.Future[tuple[bool, T | None, bool]]:
        """`make`'s unit run with the others given in this pass, at its end (`_end_pass`):
        (True, its result, _), or (False, None, whether to try it inline alone) when they
        did not run (nothing of them stays); its own error when it was alone."""
        fut: asyncio.Future[tuple[bool, T | None, bool]]
        fut = asyncio.get_running_loop().create_future()
        self._joined.append((make, fut))
        return fut

    def _end_pass(self) -> None:
        """The pass of the loop that ran a unit inline is over: the units that joined it
        run inline as ONE transaction (`_all_in_one`, each with its own budget), each
        caller told after its COMMIT. When that fails, nothing of it stays: a unit alone
        gets its error, each of several tries again alone (inline, then on the thread); cut
        short by a budget or the writer busy, one alone goes to the thread. A unit whose
        caller was cancelled meanwhile is queued on the thread here, as a queued job runs
        to its end whoever awaits it. No future is left unsettled."""
        self._inline_pass, self._inline_task = False, None
        joined, self._joined = self._joined, []
        if not joined:
            return
        try:
            self._run_joined(joined)
        except BaseException as exc:  # never strand a caller
            for _, fut in joined:
                if not fut.done():
                    fut.set_exception(_settable(exc))
            raise

    def _run_joined(self, joined: list[tuple[Made[Any], asyncio.Future[Any]]]) -> None:
        ran, values, alone = False, None, len(joined) > 1
        if self.inline_writes and not self._lock.locked():
            makes = [make for make, _ in joined]
            try:
                ran, values = self._writer.try_inline(
                    functools.partial(_all_in_one, makes), write=True
                )
            except Exception as exc:  # one of them failed: nothing stays
                if not alone:  # its own outcome
                    if not joined[0][1].done():
                        joined[0][1].set_exception(_settable(exc))
                    return
                ran = False
        if ran and values is not None:
            self.joined += len(joined) - 1
            self._ran_inline()
            for (_, fut), value in zip(joined, values, strict=True):
                if not fut.done():  # its caller was cancelled: the unit is stored all the same
                    fut.set_result((True, value, False))
            return
        for make, fut in joined:
            if not fut.done():
                fut.set_result((False, None, alone))
            else:  # its caller was cancelled: nobody runs it again but the writer's thread
                self._orphan(Together(make))

    def _orphan(self, job: Together) -> None:
        """`job` queued for a caller that is gone; its outcome is nobody's (kept referenced
        until it ends)."""
        task = asyncio.ensure_future(self._queue(job))
        self._orphans.add(task)
        task.add_done_callback(self._orphan_done)

    def _orphan_done(self, task: asyncio.Task[Any]) -> None:
        self._orphans.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.warning("a unit whose caller was cancelled did not commit: %s", exc)

    # -- schema -------------------------------------------------------------------------

    async def migrate(self, migrations: Sequence[Migration]) -> int:
        await self.write(engine.create_engine_tables)
        steps = pending(migrations, await self.version())
        return await self.write(lambda c: engine.migrate_all(c, steps))

    async def version(self) -> int:
        return await self.write(engine.user_version)

    async def tables(self) -> dict[str, tuple[str, ...]]:
        return await self.write(engine.table_columns)

    def text_index(self, name: str, tenant: str) -> SqliteTextIndex:
        return SqliteTextIndex(self, name, tenant)

    async def text_index_names(self, tenant: str) -> list[str]:
        def job(conn: Conn) -> list[str]:
            try:
                rows = conn.execute(
                    "SELECT name FROM storage_fts_stats WHERE tenant = ? ORDER BY name", (tenant,)
                ).fetchall()
            except sqlite3.OperationalError:
                return []  # not migrated: no index was ever written
            return [str(r[0]) for r in rows]

        return await self.read(job)

    async def text_indexes(self) -> list[tuple[str, str]]:
        def job(conn: Conn) -> list[tuple[str, str]]:
            try:
                rows = conn.execute(
                    "SELECT name, tenant FROM storage_fts_stats ORDER BY name, tenant"
                ).fetchall()
            except sqlite3.OperationalError:
                return []  # not migrated: no index was ever written
            return [(str(n), str(t)) for n, t in rows]

        return await self.read(job)

    async def backup(self, dest: Path) -> None:
        await asyncio.to_thread(engine.backup_to, self.path, dest)

    async def now_ms(self) -> int:
        return int(await self.fetch_value(f"SELECT {self.dialect.now_ms}"))

    # -- notifications ------------------------------------------------------------------

    async def notify(self, topic: str) -> None:
        check_topic(topic)
        await self.execute(
            "INSERT INTO storage_notify (topic, n) VALUES (?, 1) "
            "ON CONFLICT (topic) DO UPDATE SET n = n + 1",
            (topic,),
        )
        tx = self._tx.get()
        if tx is not None:
            tx.topics.add(topic)
        else:
            self._hub.wake(topic)

    def subscribe(self, topic: str) -> Sub:
        return self._hub.add(topic)

    def _start_poller(self, topic: str) -> None:
        if self._poller is None or self._poller.done():
            self._poller = asyncio.get_running_loop().create_task(self._poll())

    async def _poll(self) -> None:
        """Wake the topics whose counts moved, while anyone listens. Its first look wakes
        everyone: a notify between `subscribe` and that look would be missed otherwise."""
        if self._poll_worker is None:
            self._poll_worker = Worker(
                engine.opener(self.path, reader=True, on_connect=self._on_connect), "db-poll"
            )
            await self._poll_worker.start()
        version: int | None = None
        counts: dict[str, int] = {}
        while self._hub.topics():
            now, got = await self._look(functools.partial(_counts, seen=version))
            if version is None:
                self._hub.wake_all()
            elif got is not None:
                for topic, n in got.items():
                    if counts.get(topic) != n:
                        self._hub.wake(topic)
            version = now
            counts = got if got is not None else counts
            await asyncio.sleep(self._poll_s)

    async def _look(
        self, look: Callable[[Conn], tuple[int, dict[str, int] | None]]
    ) -> tuple[int, dict[str, int] | None]:
        """One look of the poller: on the loop's thread when its connection is idle (a
        `PRAGMA data_version`, and the counts when it moved: microseconds), so an idle
        daemon's look every `poll_s` costs no thread wake-ups; on its thread otherwise."""
        worker = self._poll_worker
        assert worker is not None
        done, seen = worker.try_inline(look)
        if done and seen is not None:
            return seen
        return await worker.run(look)

    async def aclose(self) -> None:
        self._closing = True  # no checkpoint starts from now on
        self._end_pass()  # units joined in this pass run now, before the writer stops
        if self._checkpoint is not None:
            await asyncio.gather(self._checkpoint, return_exceptions=True)
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
        readers = list(self._readers)
        if self._poll_worker is not None:
            readers.append(self._poll_worker)
        if self._checkpointer is not None:
            readers.append(self._checkpointer)
        await asyncio.gather(*(w.stop() for w in readers))
        if self._orphans:  # joined units of cancelled callers, on the writer's queue first
            await asyncio.gather(*self._orphans, return_exceptions=True)
        # the writer closes last, alone: the last connection to close checkpoints the WAL
        # into roost.db and deletes it. Closed side by side, each saw the other still open
        # and none did (6 in 300 closes), so a copy of roost.db alone missed recent writes
        # and `roost doctor` read page 1 from the WAL instead of the file.
        await self._writer.stop()

    def interrupt(self) -> None:
        """Abort the statement the writer runs now (shutdown of a stuck query)."""
        self._writer.interrupt()


def _counts(conn: Conn, seen: int | None) -> tuple[int, dict[str, int] | None]:
    (version,) = conn.execute("PRAGMA data_version").fetchone()
    if seen is not None and version == seen:
        return int(version), None
    try:
        rows = conn.execute("SELECT topic, n FROM storage_notify").fetchall()
    except sqlite3.OperationalError:  # not migrated yet: nothing was notified
        rows = []
    return int(version), {str(t): int(n) for t, n in rows}


# the engine's own transaction around ONE inline statement (spelled apart from a unit's
# BEGIN IMMEDIATE ... COMMIT, so a trace of a store's statements can leave it out)
ALONE = ("BEGIN IMMEDIATE TRANSACTION", "COMMIT TRANSACTION")


def _alone(job: Callable[[Conn], T], conn: Conn) -> T:
    """ONE writing statement inline, in a transaction of its own: its budget can cut it
    as it returns, its work done (in autocommit: committed, yet "interrupted", and run
    again on the thread: stored twice, atk39 #3); inside a transaction the cut leaves
    nothing (`Worker.try_inline` rolls it back), and a cut COMMIT that committed is a
    success (`steps.commit`)."""
    conn.execute(ALONE[0])
    try:
        value = job(conn)
        commit(conn, ALONE[1])
    except BaseException:  # any failure (an OverflowError of a bound int, too): nothing stays
        rollback(conn)
        raise
    return value


def _all_in_one(makes: list[Made[Any]], conn: Conn) -> list[Any]:
    """Each unit `makes` makes, in order, in ONE transaction, each with the inline budget
    it would have alone; their results. Any failure (a unit's, a budget's, the COMMIT's)
    leaves nothing of any of them (`Worker.try_inline`)."""
    begin(conn)
    values = []
    for make in makes:
        fresh_budget(conn)
        values.append(run_steps(conn, make()))
    commit(conn)
    return values


def _settable(exc: BaseException) -> BaseException:
    """`exc` as a future can hold it (a future refuses StopIteration, as a coroutine does)."""
    if isinstance(exc, StopIteration):
        wrapped = RuntimeError("a unit raised StopIteration")
        wrapped.__cause__ = exc
        return wrapped
    return exc


def _made_unit(make: Made[T]) -> Callable[[Conn], T]:
    """A job that makes the unit and runs it (each try a unit of its own)."""
    return lambda conn: run_unit(conn, make())


def _commit(conn: Conn) -> None:
    conn.execute("COMMIT")
