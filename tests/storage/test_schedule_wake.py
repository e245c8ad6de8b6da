"""The scheduler's wake across processes (`bridge.schedule.runtime.watch`): a job made or an
outbox entry enqueued by another process notifies the schedule topic, and the daemon's
watch wakes the scheduler, on both backends (SQLite polls `PRAGMA data_version`,
PostgreSQL LISTENs)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from bridge.schedule.runtime import watch
from tests.storage.conftest import OpenDb
from tests.waits import HANG_S

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import asyncio, sys
sys.path.insert(0, {root!r})
from pathlib import Path
from bridge.schedule.jobs import JobStore
from bridge.schedule.outbox import OutboxStore
from bridge.storage.postgres import PostgresDatabase
from bridge.storage.sqlite import SqliteDatabase
from tests.masking import m

async def main():
    if {backend!r} == "sqlite":
        db = await SqliteDatabase.open(Path({location!r}))
    else:
        db = await PostgresDatabase.open({location!r})
    try:
        if {what!r} == "job":  # as a /remind in `roost chat` beside the daemon makes it
            await JobStore(db, lambda spec, tz, after: None).create(
                tenant="alice", channel="web", chat="c", kind="reminder", spec="",
                payload=m("tea"), tz="UTC", next_run_ms=1, created_ms=1)
        else:  # as `roost send --to` stores it
            await OutboxStore(db).enqueue("alice", "web", "c", m("hi"), "send:k", now_ms=1)
    finally:
        await db.aclose()

asyncio.run(main())
"""


async def in_another_process(backend: str, location: str, what: str) -> None:
    script = CHILD.format(root=str(ROOT), backend=backend, location=location, what=what)
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", script, cwd=ROOT)
    assert await asyncio.wait_for(child.wait(), HANG_S) == 0


async def woken(wakes: asyncio.Queue[None]) -> None:
    await asyncio.wait_for(wakes.get(), HANG_S)


@pytest.mark.parametrize("what", ["job", "outbox"])
async def test_a_write_of_another_process_wakes_the_scheduler(
    backend: str, location: str, open_db: OpenDb, what: str
) -> None:
    daemon = await open_db()
    wakes: asyncio.Queue[None] = asyncio.Queue()
    watcher = asyncio.create_task(watch(daemon, lambda: wakes.put_nowait(None)))
    try:
        await woken(wakes)  # the subscription's first look: at once
        await in_another_process(backend, location, what)
        await woken(wakes)
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)


async def test_roost_send_to_wakes_the_daemons_watch(
    backend: str, location: str, open_db: OpenDb, tmp_path: Path
) -> None:
    """The real `roost send --to` (SQLite: the only backend a home has yet)."""
    if backend != "sqlite":
        pytest.skip("`roost send` opens the home's roost.db")
    home = Path(location).parent
    daemon = await open_db()
    wakes: asyncio.Queue[None] = asyncio.Queue()
    watcher = asyncio.create_task(watch(daemon, lambda: wakes.put_nowait(None)))
    try:
        await woken(wakes)
        config = tmp_path / "roost.toml"
        config.write_text("")
        env = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
        env.update(ROOST_HOME=str(home), ROOST_CONFIG=str(config))
        sent = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bridge.cli.main", "send", "--to", "web:default", "hello",
            env=env, cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(sent.communicate(), HANG_S)
        assert sent.returncode == 0, err.decode()
        assert "queued" in out.decode()
        await woken(wakes)
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
