"""SQLite's side of the engine's own tables and the file work: open, migrate, back up.

Functions of a `sqlite3.Connection` that run on a worker thread.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from bridge.storage.migrations import Migration
from bridge.storage.placeholders import split
from bridge.storage.sqlite import text

ENGINE = (
    "CREATE TABLE IF NOT EXISTS storage_leases (name TEXT PRIMARY KEY, owner TEXT NOT NULL, "
    "expires_ms INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS storage_notify (topic TEXT PRIMARY KEY, n INTEGER NOT NULL)",
    *text.TABLES,
)


def private_file(path: Path) -> None:
    """Create `path` 0600 if missing; it and its WAL siblings 0600 if present (they hold
    text). An existing file is never opened here: closing a descriptor of a database
    file drops every POSIX lock this process holds on it, so another connection of
    the process (a plain sqlite3 one) would lose its shared lock, and another process
    closing its last connection would then delete the WAL under both."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        path.chmod(0o600)
    for suffix in ("-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            path.with_name(path.name + suffix).chmod(0o600)


BUSY_MS = 10_000  # how long a statement waits for another connection's lock
WAL_KEEP_BYTES = 64 << 20  # a rewound WAL's file is truncated to this


def opener(
    path: Path, *, reader: bool, on_connect: Callable[[sqlite3.Connection], None] | None
) -> Callable[[], sqlite3.Connection]:
    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(
            path, isolation_level=None, timeout=BUSY_MS / 1000, check_same_thread=False
        )
        conn.execute(f"PRAGMA busy_timeout={BUSY_MS}")
        if reader:
            conn.execute("PRAGMA query_only=1")
        else:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            # no checkpoint inside a commit: a write may run on the event loop's thread
            # (`Worker.try_inline`); `SqliteDatabase` makes them (`_checkpoint_wal`)
            conn.execute("PRAGMA wal_autocheckpoint=0")
            # a WAL rewound after a burst is cut back to this size (else its file keeps
            # the burst's size on disk until the last connection closes)
            conn.execute(f"PRAGMA journal_size_limit={WAL_KEEP_BYTES}")
            conn.execute("PRAGMA foreign_keys=ON")
        if on_connect is not None:
            on_connect(conn)
        return conn

    return connect


def checkpoint(conn: sqlite3.Connection) -> None:
    """A passive WAL checkpoint (copies what no reader needs; never waits for one)."""
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


def create_engine_tables(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in ENGINE:
            conn.execute(statement)
        text.upgrade(conn)  # a home of the old text index layout
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def run_step(conn: sqlite3.Connection, step: Migration) -> bool:
    """One migration in one transaction with its version; False when another process
    had run it already."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if user_version(conn) >= step.version:
            conn.execute("COMMIT")
            return False
        for statement in split(step.sqlite):
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {int(step.version)}")
        conn.execute("COMMIT")
        return True
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def migrate_all(conn: sqlite3.Connection, steps: Sequence[Migration]) -> int:
    for step in steps:
        run_step(conn, step)
    return user_version(conn)


def backup_to(source: Path, dest: Path) -> None:
    """SQLite's online backup of `source` into `dest` (0600): temp file, fsync, rename."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    os.close(os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
    src = sqlite3.connect(source, timeout=10.0)
    try:
        out = sqlite3.connect(tmp)
        try:
            src.backup(out)
        finally:
            out.close()
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        src.close()
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, dest)
    fd = os.open(dest.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def table_columns(conn: sqlite3.Connection) -> dict[str, tuple[str, ...]]:
    names = [
        str(r[0])
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "AND name NOT LIKE 'storage_%' ORDER BY name"
        )
    ]
    return {n: tuple(str(c[1]) for c in conn.execute(f'PRAGMA table_info("{n}")')) for n in names}
