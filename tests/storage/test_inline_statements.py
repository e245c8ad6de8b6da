"""Short statements run on the loop's thread by an idle connection (`Worker.try_inline`).

A point select runs inline (no thread hop); a long read is interrupted by its
step budget and finished on the reader's thread while the event loop goes
on; a read never overtakes a job queued before it; errors are the same
either way; the writer's commits are seen at once. A single write outside a
transaction runs inline on the idle writer, never inside or beside an open
transaction, never waiting for another connection's lock on the loop, and
a long one interrupted is done once, on the thread. WAL checkpoints run on
a connection of their own, beside the writer's transactions.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from pathlib import Path

import pytest

from bridge.storage.errors import StorageError
from bridge.storage.sqlite import SqliteDatabase, database, engine
from tests.waits import HANG_S

LONG = (
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000) "
    "SELECT count(*), sum(i) FROM n"
)


@pytest.fixture
async def db(tmp_path: Path) -> SqliteDatabase:
    db = await SqliteDatabase.open(tmp_path / "roost.db", readers=1)
    await db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    await db.execute_many("INSERT INTO t VALUES (?, ?)", [(i, f"v{i}") for i in range(100)])
    yield db  # type: ignore[misc]
    await db.aclose()


async def test_a_point_select_is_answered_inline_and_sees_the_last_commit(
    db: SqliteDatabase,
) -> None:
    writer = db._writer  # idle: its connection answers (its page cache is warm)
    before, writes = writer.inlined, writer.inlined_writes
    assert await db.fetch_one("SELECT v FROM t WHERE id = ?", (7,)) == ("v7",)
    assert await db.fetch_one("SELECT v FROM t WHERE id = ?", (1000,)) is None
    assert await db.fetch_value("SELECT count(*) FROM t") == 100
    assert writer.inlined == before + 3
    await db.execute("INSERT INTO t VALUES (1000, 'new')")
    assert await db.fetch_all("SELECT v FROM t WHERE id >= 99 ORDER BY id") == [("v99",), ("new",)]
    assert (writer.inlined, writer.inlined_writes) == (before + 5, writes + 1)


async def test_a_read_beside_another_tasks_transaction_is_a_readers_and_sees_no_uncommitted_row(
    db: SqliteDatabase,
) -> None:
    reader, writer = db._readers[0], db._writer
    opened, leave = asyncio.Event(), asyncio.Event()

    async def holder() -> None:
        async with db.transaction():
            await db.execute("UPDATE t SET v = 'uncommitted' WHERE id = 4")
            opened.set()
            await leave.wait()

    task = asyncio.ensure_future(holder())
    await opened.wait()
    before, on_writer = reader.inlined, writer.inlined
    assert await db.fetch_value("SELECT v FROM t WHERE id = 4") == "v4"
    assert (reader.inlined, writer.inlined) == (before + 1, on_writer)
    leave.set()
    await task
    assert await db.fetch_value("SELECT v FROM t WHERE id = 4") == "uncommitted"


async def test_a_long_read_leaves_the_loop_and_finishes_on_the_thread(
    db: SqliteDatabase,
) -> None:
    reader = db._readers[0]
    before = reader.inlined
    ticks_while_reading = 0
    query = asyncio.ensure_future(db.fetch_one(LONG))

    async def ticker() -> None:
        nonlocal ticks_while_reading
        while not query.done():
            ticks_while_reading += 1
            await asyncio.sleep(0)

    tick = asyncio.ensure_future(ticker())
    assert await query == (300000, 300000 * 300001 // 2)
    await tick
    assert reader.inlined == before  # interrupted inline, answered by the thread
    assert ticks_while_reading > 1  # the loop ran other tasks meanwhile


async def test_a_read_never_overtakes_a_job_queued_before_it(db: SqliteDatabase) -> None:
    reader = db._readers[0]
    opened, leave = asyncio.Event(), asyncio.Event()

    async def holder() -> None:  # the writer busy: reads go to the reader
        async with db.transaction():
            opened.set()
            await leave.wait()

    task = asyncio.ensure_future(holder())
    await opened.wait()
    long = asyncio.ensure_future(db.fetch_one(LONG))
    await asyncio.sleep(0)  # the long read is on the reader's thread now (or queued)
    before = reader.inlined
    short = asyncio.ensure_future(db.fetch_one("SELECT v FROM t WHERE id = 3"))
    done, _ = await asyncio.wait([long, short], return_when=asyncio.FIRST_COMPLETED)
    assert long in done  # one reader, in order: the short one waited behind it
    assert await short == ("v3",)
    assert reader.inlined == before
    leave.set()
    await task


async def test_inline_jobs_set_no_busy_timeout_the_writers_thread_leaves_it_at_zero(
    db: SqliteDatabase,
) -> None:
    ran: list[tuple[str, str]] = []

    def trace(sql: str) -> None:
        ran.append((threading.current_thread().name, sql))

    await db.write(lambda c: c.set_trace_callback(trace))
    try:
        for i in range(3):  # a job on the thread, then an inline write and read
            async with db.transaction():
                await db.execute("UPDATE t SET v = ? WHERE id = 9", (f"tx{i}",))
            await db.execute("UPDATE t SET v = ? WHERE id = 9", (f"inline{i}",))
            assert await db.fetch_value("SELECT v FROM t WHERE id = 9") == f"inline{i}"
    finally:
        await db.write(lambda c: c.set_trace_callback(None))
    inline = [sql for thread, sql in ran if thread != "db-w"]
    # each inline write in a transaction of its own (BEGIN, UPDATE, COMMIT), and the read
    assert len(inline) == 12 and not any("PRAGMA" in sql for sql in inline)
    thread = [sql for name, sql in ran if name == "db-w" and "busy_timeout" in sql]
    wait, idle = "PRAGMA busy_timeout=10000", "PRAGMA busy_timeout=0"
    # the trace's job ends idle; a transaction waits from its BEGIN to its COMMIT; the last
    # job (the trace's end) waits
    assert thread == [idle, *[wait, idle] * 3, wait]
    assert db._writer._busy_ms == 0


async def test_errors_are_the_same_inline(db: SqliteDatabase) -> None:
    with pytest.raises(StorageError, match="no such table") as caught:
        await db.fetch_one("SELECT * FROM missing")
    assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    db.inline_reads = False
    with pytest.raises(StorageError, match="no such table"):
        await db.fetch_one("SELECT * FROM missing")


async def test_a_short_write_runs_inline_on_the_idle_writer(db: SqliteDatabase) -> None:
    writer = db._writer
    before = writer.inlined
    assert await db.execute("UPDATE t SET v = 'x' WHERE id < 10") == 10
    assert await db.fetch_one("UPDATE t SET v = 'y' WHERE id = 1 RETURNING v") == ("y",)
    assert writer.inlined == before + 2
    async with db.transaction():  # in a transaction: every statement on the thread
        await db.execute("UPDATE t SET v = 'z' WHERE id = 2")
    assert writer.inlined == before + 2
    assert await db.fetch_value("SELECT v FROM t WHERE id = 2") == "z"


async def test_no_write_runs_inline_beside_another_tasks_transaction(db: SqliteDatabase) -> None:
    writer = db._writer
    opened, leave = asyncio.Event(), asyncio.Event()

    async def holder() -> None:
        async with db.transaction():
            await db.execute("UPDATE t SET v = 'tx' WHERE id = 5")
            opened.set()
            await leave.wait()

    task = asyncio.ensure_future(holder())
    await opened.wait()
    before = writer.inlined
    write = asyncio.ensure_future(db.execute("UPDATE t SET v = 'after' WHERE id = 5"))
    await asyncio.sleep(0)
    assert not write.done()  # it waits for the transaction: one writer at a time
    leave.set()
    await task
    assert await write == 1
    assert writer.inlined == before
    assert await db.fetch_value("SELECT v FROM t WHERE id = 5") == "after"


async def test_a_write_waits_for_another_connections_lock_off_the_loop(
    db: SqliteDatabase, tmp_path: Path
) -> None:
    other = sqlite3.connect(tmp_path / "roost.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process writing
    try:
        before = db._writer.inlined
        write = asyncio.ensure_future(db.execute("UPDATE t SET v = 'mine' WHERE id = 6"))
        ticks = 0
        while ticks < 5:  # the loop goes on while the write waits for the lock
            await asyncio.sleep(0)
            ticks += 1
        assert not write.done()
        other.execute("COMMIT")
        assert await write == 1
        assert db._writer.inlined == before
    finally:
        other.close()


async def test_a_long_write_interrupted_inline_is_done_once_on_the_thread(
    db: SqliteDatabase,
) -> None:
    before = db._writer.inlined
    sql = (
        "INSERT INTO t (id, v) WITH RECURSIVE n(i) AS (SELECT 1000 UNION ALL "
        "SELECT i + 1 FROM n WHERE i < 100999) SELECT i, 'bulk' FROM n"
    )
    assert await db.execute(sql) == 100_000
    assert db._writer.inlined == before
    assert await db.fetch_value("SELECT count(*) FROM t WHERE v = 'bulk'") == 100_000


async def test_checkpoints_run_on_a_connection_of_their_own(
    db: SqliteDatabase, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    ran: list[tuple[str, int]] = []

    def spy(conn: sqlite3.Connection) -> None:
        done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[2]
        ran.append((threading.current_thread().name, done))

    monkeypatch.setattr(database, "CHECKPOINT_EVERY", 10)
    monkeypatch.setattr(engine, "checkpoint", spy)
    assert await db.fetch_value("PRAGMA wal_autocheckpoint") == 0
    for i in range(25):
        if i % 3:
            await db.execute("UPDATE t SET v = ? WHERE id = 8", (f"n{i}",))
        else:  # one counted inside a transaction
            async with db.transaction():
                await db.execute("UPDATE t SET v = ? WHERE id = 8", (f"n{i}",))
                await asyncio.sleep(0)
        if db._checkpoint is not None:
            await db._checkpoint
    # each: the bulk beside the writer, then the writer's top-up between its transactions
    assert [name for name, _ in ran] == ["db-ckpt", "db-w", "db-ckpt", "db-w"]
    assert all(done > 0 for _, done in ran)  # the WAL's committed frames were copied
    assert "checkpoint failed" not in caplog.text


async def test_a_checkpoint_does_not_wait_for_the_writers_transaction(
    db: SqliteDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer's lock is not the checkpoint's: one counted inside a transaction copies
    the WAL while the transaction is open (on the writer's thread, it waited for the
    commit, and so did every write queued behind it); only its top-up, on the writer,
    runs after the commit."""
    loop = asyncio.get_running_loop()
    copied: asyncio.Future[str] = loop.create_future()
    real = engine.checkpoint

    def spy(conn: sqlite3.Connection) -> None:
        real(conn)
        name = threading.current_thread().name
        loop.call_soon_threadsafe(lambda: copied.done() or copied.set_result(name))

    monkeypatch.setattr(database, "CHECKPOINT_EVERY", 3)
    monkeypatch.setattr(engine, "checkpoint", spy)
    await db.execute("UPDATE t SET v = 'a' WHERE id = 1")
    await db.execute("UPDATE t SET v = 'b' WHERE id = 1")
    async with db.transaction():
        await db.execute("UPDATE t SET v = 'c' WHERE id = 1")  # the third: a checkpoint
        assert db._checkpoint is not None
        assert await asyncio.wait_for(copied, HANG_S) == "db-ckpt"
        assert await db.fetch_value("SELECT v FROM t WHERE id = 1") == "c"
    await asyncio.wait_for(asyncio.shield(db._checkpoint), HANG_S)
    assert await db.fetch_value("SELECT v FROM t WHERE id = 1") == "c"


async def test_the_wal_is_rewound_though_a_write_commits_while_it_is_copied(
    db: SqliteDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite rewinds the WAL only when a write begins after a checkpoint copied every
    frame. A write that began before the side connection's checkpoint and committed
    while it copied (steady load) left frames it never copied, at every checkpoint, so
    the WAL was never rewound and grew without bound (745-805 MB after 20 s of turns,
    session 45's attacker); the writer's top-up copies them."""
    real = engine.checkpoint

    def beside(conn: sqlite3.Connection) -> None:
        if threading.current_thread().name != "db-ckpt":
            real(conn)
            return
        other = sqlite3.connect(db.path, isolation_level=None, timeout=HANG_S)
        try:
            other.execute("BEGIN IMMEDIATE")  # before the copy: no rewind at its start
            other.execute("UPDATE t SET v = v || '.' WHERE id = 1")
            real(conn)
            other.execute("COMMIT")  # its frames after what the copy saw
        finally:
            other.close()

    monkeypatch.setattr(database, "CHECKPOINT_EVERY", 10)
    monkeypatch.setattr(engine, "checkpoint", beside)
    for i in range(300):
        await db.execute("UPDATE t SET v = ? WHERE id = 8", (f"n{i}",))
        if db._checkpoint is not None:
            await db._checkpoint
    look = sqlite3.connect(db.path, isolation_level=None)
    try:
        frames = look.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
    finally:
        look.close()
    assert frames < 40, f"{frames} frames in the WAL after 300 writes: never rewound"


async def test_no_checkpoint_starts_once_the_database_closes(tmp_path: Path) -> None:
    """A write counted while `aclose` ran made the checkpoint's connection and thread
    after `aclose` had stopped its workers: both outlived the database (and the WAL was
    no longer deleted by the writer's close, not the last one)."""
    db = await SqliteDatabase.open(tmp_path / "roost.db", readers=1)
    await db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    before = {t.name for t in threading.enumerate()}
    db._writes = database.CHECKPOINT_EVERY - 1  # the next write starts the first one
    closing = asyncio.create_task(db.aclose())
    await asyncio.sleep(0)  # aclose has begun
    with contextlib.suppress(StorageError, RuntimeError):
        await asyncio.wait_for(db.execute("INSERT INTO t VALUES (1, 'late')"), HANG_S)
    await closing
    assert db._checkpoint is None  # none started: its connection would outlive the close
    assert db._checkpointer is None
    left = {t.name for t in threading.enumerate()} - before
    assert not any(name.startswith("db-") for name in left), left


def test_a_fetch_goes_to_a_reader_only_when_it_writes_nothing() -> None:
    reads = ("SELECT 1", "  with v (n) AS (VALUES (1)) SELECT n FROM v", "VALUES (1)")
    writes = (
        "UPDATE t SET v = 'x' RETURNING id",
        "WITH v AS (SELECT 1) INSERT INTO t SELECT * FROM v RETURNING id",
        "DELETE FROM t RETURNING id",
        "PRAGMA user_version",
    )
    assert all(database._reads_only(sql) for sql in reads)
    assert not any(database._reads_only(sql) for sql in writes)
    assert database._reads_only("SELECT 1")  # the second time from the cache, the same


def _unit(n: int, execute, fetch_one):  # type: ignore[no-untyped-def]
    """Two rows and a counter: stored once, or twice when a committed unit runs again."""
    yield execute("INSERT INTO t (v) VALUES (?)", (f"a{n}",))
    yield fetch_one("SELECT count(*) FROM t")
    yield execute("INSERT INTO t (v) VALUES (?)", (f"b{n}",))
    yield execute("UPDATE c SET n = n + 1")
    return n


async def test_an_inline_write_cut_as_it_returns_its_work_done_is_stored_once(
    db: SqliteDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite calls the progress handler once more as a statement returns: a COMMIT (or
    an autocommit statement) whose budget ends there has committed, yet says
    "interrupted" (atk39 #3: the unit was run again on the thread, stored twice). Every
    budget from 1 to 400 checks of one step each cuts the inline work at every point
    there is, that one included; each write must be stored exactly once."""
    from functools import partial

    from bridge.storage.sqlite import worker
    from bridge.storage.units import execute, fetch_one

    await db.execute("CREATE TABLE c (n INTEGER NOT NULL)")
    await db.execute("INSERT INTO c VALUES (0)")
    monkeypatch.setattr(worker, "INLINE_PERIOD", 1)
    budgets = range(1, 400)
    for n in budgets:
        monkeypatch.setattr(worker, "INLINE_PERIODS", n)
        assert await db.atomic(partial(_unit, n, execute, fetch_one)) == n
        assert await db.execute("INSERT INTO t (v) VALUES (?)", (f"s{n}",)) == 1
    rows = await db.fetch_all("SELECT substr(v, 1, 1), count(*) FROM t GROUP BY 1 ORDER BY 1")
    assert dict(rows) == {"a": len(budgets), "b": len(budgets), "s": len(budgets), "v": 100}
    assert await db.fetch_value("SELECT n FROM c") == len(budgets)


async def test_an_inline_write_that_fails_outside_sqlite_leaves_no_transaction_open(
    db: SqliteDatabase,
) -> None:
    """A value SQLite cannot bind (an int past 2^63) fails in Python, not in SQLite: the
    inline statement's own transaction must not stay open (atk2 s39: the writes
    acknowledged after it were rolled back by the next unit, and other processes got
    "database is locked" meanwhile)."""
    with pytest.raises(OverflowError):
        await db.execute("INSERT INTO t (v) VALUES (?)", (2**64,))
    assert not await db.write(lambda c: c.in_transaction)
    await db.execute("INSERT INTO t VALUES (500, 'kept')")
    # another process's write gets the lock (a leaked transaction would hold it for good:
    # the bound only ends that hang)
    other = sqlite3.connect(db.path, timeout=HANG_S)
    try:
        other.execute("INSERT INTO t VALUES (501, 'theirs')")
        other.commit()
    finally:
        other.close()
    assert await db.fetch_value("SELECT count(*) FROM t WHERE id IN (500, 501)") == 2
