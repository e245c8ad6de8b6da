"""Fail safe on a sick machine: one daemon per home, a damaged roost.db named at start.

The real `roost serve` runs as a subprocess. A second one on the same home is
refused with one line naming the holder's pid (exit 1); once the first stops,
a new one starts (the lock dies with its holder). A truncated or garbage
roost.db is one line naming the file and what to do, exit 1, no traceback.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from bridge.app.instance import InstanceBusy, hold
from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import env_for, run, start_daemon


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as server:
        yield server


async def test_a_second_serve_on_the_same_home_names_the_holder(
    home: Path, fake: FakeOpenAI
) -> None:
    env = env_for(home, fake)
    first = await start_daemon(env)
    code, out, err = await run(["serve"], env)
    assert code == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert f"pid {first.proc.pid}" in lines[0] and str(home) in lines[0]
    assert "Traceback" not in err and "web chat" not in out
    code, _ = await first.stop()
    assert code == 0
    again = await start_daemon(env)  # the lock went with its holder
    code, _ = await again.stop()
    assert code == 0


def test_the_lock_is_released_for_the_next_holder(tmp_path: Path) -> None:
    lock = hold(tmp_path)
    with pytest.raises(InstanceBusy, match=f"pid {os.getpid()}"):
        hold(tmp_path)
    assert (tmp_path / "roost.lock").stat().st_mode & 0o077 == 0
    lock.release()
    hold(tmp_path).release()


def filled_db(path: Path) -> None:
    """A real roost.db with enough rows to span many pages."""
    from bridge.core.db import connect

    conn = connect(path)
    conn.executemany(
        "INSERT INTO session_messages (tenant, channel, chat, turn, role, content, at) "
        "VALUES ('t', 'web', 'c', ?, 'user', ?, 0)",
        [(i, f"message {i} " + "x" * 300) for i in range(2000)],
    )
    conn.close()


def truncated(path: Path) -> None:
    filled_db(path)
    os.truncate(path, path.stat().st_size // 2)


def garbage(path: Path) -> None:
    path.write_bytes(b"this is not a database\n" * 500)


def zeroed_header(path: Path) -> None:
    filled_db(path)
    with path.open("r+b") as fh:
        fh.write(b"\0" * 100)


def torn_page(path: Path) -> None:
    """A page in the middle overwritten with noise (a torn write on a dying disk)."""
    filled_db(path)
    with sqlite3.connect(path) as conn:
        page = conn.execute("PRAGMA page_size").fetchone()[0]
    with path.open("r+b") as fh:
        fh.seek(page * 3)
        fh.write(os.urandom(page) * 4)


def damaged_home(home: Path, damage: Callable[[Path], None]) -> tuple[Path, bytes]:
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    db = home / "roost.db"
    damage(db)
    return db, db.read_bytes()


@pytest.mark.parametrize("damage", [truncated, garbage, zeroed_header, torn_page])
async def test_a_damaged_database_is_one_line_and_exit_1(
    home: Path, fake: FakeOpenAI, damage: object
) -> None:
    assert callable(damage)
    db, before = damaged_home(home, damage)
    code, out, err = await run(["serve"], env_for(home, fake))
    assert code == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert str(db) in lines[0] and "damaged" in lines[0] and "backup" in lines[0]
    assert "web chat" not in out
    assert db.read_bytes() == before  # the evidence is left as it was


def test_instances_on_postgresql_share_the_home_and_exclude_a_sqlite_one(tmp_path: Path) -> None:
    one = hold(tmp_path, shared=True)  # `[database] url` PostgreSQL: several on one home
    two = hold(tmp_path, shared=True)
    with pytest.raises(InstanceBusy, match="PostgreSQL"):
        hold(tmp_path)  # one on SQLite (or `roost export`) waits for all of them
    one.release()
    with pytest.raises(InstanceBusy):
        hold(tmp_path)
    two.release()
    alone = hold(tmp_path)
    with pytest.raises(InstanceBusy, match="PostgreSQL"):
        hold(tmp_path, shared=True)
    alone.release()
