"""`roost db migrate` as a real process: kill -9 mid-copy and run again, the daemon's
lock, `--online`, `--dry-run`, bad and unreachable targets (a real PostgreSQL)."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bridge.app.instance import hold
from bridge.storage import copy
from bridge.storage.postgres import PostgresDatabase
from bridge.storage.schema import MIGRATIONS
from bridge.storage.sqlite import SqliteDatabase
from tests.storage.filler import fill
from tests.waits import HANG_S

ROOST = [sys.executable, "-m", "bridge.cli.main", "db", "migrate"]
BIG = 1_500  # extra session_messages: four batches of 500, the kill lands in the second


class RolledBack(Exception):
    """Raised to roll back the test's own transaction."""


async def make_home(home: Path, big: int = 0) -> None:
    os.makedirs(home, mode=0o700, exist_ok=True)
    path = home / "roost.db"
    db = await SqliteDatabase.open(path)
    try:
        await db.migrate(MIGRATIONS)
        await fill(db, path, 10, big=big)
    finally:
        await db.aclose()


def env_of(home: Path) -> dict[str, str]:
    return {**os.environ, "ROOST_HOME": str(home)}


async def roost(home: Path, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *ROOST,
        *args,
        env=env_of(home),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), HANG_S)
    return proc.returncode or 0, out.decode(), err.decode()


@pytest.fixture
async def target(pg_url: str) -> AsyncIterator[Any]:
    db = await PostgresDatabase.open(pg_url)
    yield db
    await db.aclose()


async def test_killed_mid_copy_and_run_again_every_table_verifies(
    home: Path, pg_url: str, target: Any
) -> None:
    """The kill lands at a known point, whatever the machine's speed: the test holds
    an uncommitted row with the key of the second batch's first row, so the copy's
    second insert into session_messages waits for the test's transaction; the copy is
    killed once it says its first batch is in, and the test's row is rolled back."""
    await make_home(home, big=BIG)
    await target.migrate(MIGRATIONS)  # so the test's row can be held before the copy starts
    source = await SqliteDatabase.open(home / "roost.db")
    try:
        columns = (await source.tables())["session_messages"]
        batches = copy.pages(source, "session_messages", columns, 500)
        await anext(batches)
        blocker = (await anext(batches))[0]
        await batches.aclose()
    finally:
        await source.aclose()
    names = ", ".join(f'"{c}"' for c in columns)
    hold_row = f"INSERT INTO session_messages ({names}) VALUES ({', '.join('?' * len(columns))})"
    with pytest.raises(RolledBack):
        async with target.transaction():
            await target.execute_many(hold_row, [blocker])
            proc = await asyncio.create_subprocess_exec(
                *ROOST, "--to", pg_url, "--batch", "500", env=env_of(home),
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            assert proc.stdout is not None
            seen = []
            while True:
                line = (await asyncio.wait_for(proc.stdout.readline(), HANG_S)).decode()
                assert line, f"exited before copying session_messages: {seen}"
                seen.append(line)
                if line.startswith("  copying session_messages: 500 rows"):
                    proc.kill()  # SIGKILL inside the table's transaction, its 2nd batch waiting
                    break
            await asyncio.wait_for(proc.wait(), HANG_S)
            raise RolledBack
    assert await copy.marker(target) == copy.COPYING
    assert await target.fetch_value("SELECT count(*) FROM session_messages") == 0
    assert await target.fetch_value("SELECT count(*) FROM refusal_notices") == 10

    code, out, err = await roost(home, "--to", pg_url, "--batch", "500")
    assert code == 0, err
    rows = {line.split()[0]: line for line in out.splitlines() if line[:1].isalpha()}
    every = str(10 + BIG)
    assert rows["session_messages"].split()[1:3] == [every, every]
    assert rows["session_messages"].endswith("ok (copied)")
    assert rows["refusal_notices"].endswith(" ok")  # copied before the kill: only checked
    assert "verified: every table's rows and hash are equal" in out
    assert await copy.marker(target) == copy.DONE
    source = await SqliteDatabase.open(home / "roost.db")
    try:
        assert all(c.ok for c in await copy.verify(source, target))
    finally:
        await source.aclose()


async def test_refused_while_the_daemon_holds_the_home_unless_online(
    home: Path, pg_url: str, target: Any
) -> None:
    await make_home(home)
    lock = hold(home)  # as `roost serve` does
    try:
        code, _, err = await roost(home, "--to", pg_url)
        assert code == 1
        assert f"roost serve is running on {home}" in err and "--online" in err
        assert await target.version() == 0  # nothing written

        code, out, err = await roost(home, "--to", pg_url, "--online")
        assert code == 0, err
        assert "(online snapshot)" in out and "once roost serve is stopped, run again" in out
        assert await copy.marker(target) == copy.SNAPSHOT
        assert [n for n in os.listdir(home) if "snapshot" in n] == []  # removed after
    finally:
        lock.release()
    code, out, err = await roost(home, "--to", pg_url)
    assert code == 0, err
    assert "(copied)" not in out  # nothing changed since the snapshot
    assert await copy.marker(target) == copy.DONE


async def test_dry_run_prints_counts_and_writes_nothing(
    home: Path, pg_url: str, target: Any
) -> None:
    await make_home(home)
    code, out, err = await roost(home, "--to", pg_url, "--dry-run")
    assert code == 0, err
    lines = {line.split()[0]: line.split()[1:] for line in out.splitlines()[2:] if line.strip()}
    assert lines["session_messages"] == ["10", "-"]
    assert lines["text:recall"] == ["60"]
    assert "target: schema version none (empty); no copy into it yet; nothing written" in out
    assert await target.version() == 0


async def test_a_bad_or_unreachable_target_is_told_without_its_password(home: Path) -> None:
    await make_home(home)
    code, _, err = await roost(home, "--to", "mysql://u:pw@host/db")
    assert code == 1 and "must start with postgresql://" in err
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, _, err = await roost(home, "--to", f"postgresql://u:hunter2pw@127.0.0.1:{port}/roost")
    assert code == 1
    assert f"--to: cannot reach PostgreSQL at postgresql://u:***@127.0.0.1:{port}/roost" in err
    assert "hunter2pw" not in err
