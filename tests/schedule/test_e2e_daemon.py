"""The real `roost serve` with jobs: kill -9, missed slots, `roost send --to`, `roost jobs`.

The daemon runs as a subprocess against the fake Bot API of this process;
jobs are written into its roost.db beforehand, as the chat commands would.
Waits are bounded hang guards, never timing assertions.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import sys
import time
from pathlib import Path

from bridge.core.db import connect
from bridge.schedule.jobs import JobStore
from bridge.schedule.service import next_run_ms
from tests.masking import m
from tests.schedule.database import database_of
from tests.telegram.conftest import ALICE, fake
from tests.telegram.fake_bot_api import Failure, FakeBotAPI
from tests.telegram.test_logs import daemon_env
from tests.waits import HANG_S, until

__all__ = ["fake"]
ROOST = [sys.executable, "-m", "bridge.cli.main"]
HOUR = 3_600_000


def now_ms() -> int:
    return int(time.time() * 1000)


async def add_job(home: Path, payload: str, at_ms: int, spec: str = "") -> str:
    connect(home / "roost.db").close()  # the home's roost.db, as the daemon makes it
    async with database_of(home / "roost.db") as db:
        job = await JobStore(db, next_run_ms).create(
            tenant="alice", channel="telegram", chat=str(ALICE), kind="reminder", spec=spec,
            payload=m(payload), tz="UTC", next_run_ms=at_ms, created_ms=at_ms - HOUR,
        )  # fmt: skip
    return job.id


def outbox_rows(home: Path) -> list[tuple[str, str, int, str]]:
    conn = sqlite3.connect(home / "roost.db")
    try:
        rows = conn.execute("SELECT key, state, attempts, last_error FROM outbox ORDER BY id")
        return [(str(k), str(s), int(a), str(e)) for k, s, a, e in rows]
    finally:
        conn.close()


async def start(home: Path, fake: FakeBotAPI) -> asyncio.subprocess.Process:
    calls = len(fake.calls_of("getUpdates"))
    proc = await asyncio.create_subprocess_exec(
        *ROOST,
        "serve",
        env=daemon_env(home, fake),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    await fake.wait_call("getUpdates", calls + 1, limit_s=HANG_S)
    return proc


async def stop(proc: asyncio.subprocess.Process) -> str:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
    out, err = await asyncio.wait_for(proc.communicate(), HANG_S)
    return out.decode() + err.decode()


def texts(fake: FakeBotAPI) -> list[str]:
    return [m.text for m in fake.sent_to(ALICE)]


async def test_kill_9_between_run_and_delivery_delivers_exactly_once(
    home: Path, fake: FakeBotAPI
) -> None:
    await add_job(home, "take the pills", now_ms())
    # every delivery of the first daemon fails: it waits to retry (on a busy machine a
    # retry may be on its way when the kill comes: it fails too, never lands late)
    fake.fail("sendMessage", *[Failure.bad_gateway()] * 10_000)
    first = await start(home, fake)
    try:
        await until(lambda: [r[1::2] for r in outbox_rows(home)] == [("queued", "network")])
        first.kill()  # SIGKILL: no shutdown, no cleanup
        await first.wait()
    finally:
        await stop(first)
    await until(fake.quiet, "the killed daemon's last calls answered")
    assert texts(fake) == []
    fake.heal("sendMessage")
    second = await start(home, fake)
    try:
        await fake.wait_until(lambda: texts(fake) == ["⏰ take the pills"], limit_s=HANG_S)
        await until(lambda: outbox_rows(home)[0][1] == "delivered")
    finally:
        logs = await stop(second)
    assert second.returncode == 0, logs
    assert texts(fake) == ["⏰ take the pills"]  # once: the run was not repeated
    ((key, state, attempts, _),) = outbox_rows(home)
    assert key.startswith("job:") and state == "delivered" and attempts == 2


async def test_missed_slots_run_once_and_roost_send_to_arrives(
    home: Path, fake: FakeBotAPI
) -> None:
    job_id = await add_job(home, "stand up", now_ms() - 10 * HOUR, spec="1h")  # ten slots missed
    proc = await start(home, fake)
    try:
        await fake.wait_until(lambda: texts(fake) == ["⏰ stand up"], limit_s=HANG_S)
        env = daemon_env(home, fake)
        sent = await asyncio.create_subprocess_exec(
            *ROOST, "send", "--to", f"telegram:{ALICE}", "--key", "cron-1", "backup", "done",
            env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(sent.communicate(), HANG_S)
        assert sent.returncode == 0, err.decode()
        assert "queued" in out.decode()
        await fake.wait_until(lambda: texts(fake)[-1:] == ["backup done"], limit_s=HANG_S)
        again = await asyncio.create_subprocess_exec(
            *ROOST, "send", "--to", f"telegram:{ALICE}", "--key", "cron-1", "backup", "done",
            env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, _ = await asyncio.wait_for(again.communicate(), HANG_S)
        assert "nothing added" in out.decode()
        listing = await asyncio.create_subprocess_exec(
            *ROOST, "jobs", "--tenant", "alice",
            env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, _ = await asyncio.wait_for(listing.communicate(), HANG_S)
    finally:
        logs = await stop(proc)
    assert proc.returncode == 0, logs
    assert texts(fake) == ["⏰ stand up", "backup done"]  # one run for ten slots, one send
    (line,) = [row for row in out.decode().splitlines() if job_id in row]
    assert "every 1h" in line and "runs 1" in line and "stand up" not in line
