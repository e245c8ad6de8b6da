"""A `/remind` set in the terminal arrives in the terminal, through the real processes.

`roost serve` runs the job (as it runs every chat's); an open `roost chat`
prints it between answers, and one opened later prints what it missed, once.
Without a running daemon the confirmation says so. The job's time is moved
to now in roost.db (as the clock passing would), and the daemon notices the
commit by itself; every wait is a readiness signal with a hang guard.
"""

from __future__ import annotations

import asyncio
import os
import re
import sqlite3
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.schedule.outbox import WAKE_TOPIC
from tests.spine.test_daemon import Daemon, start_daemon
from tests.waits import HANG_S

ROOST = [sys.executable, "-m", "bridge.cli.main"]
GUARD_S = HANG_S  # only to stop a hang


def offline_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
    env.update(
        ROOST_HOME=str(home),
        ROOST_CONFIG=os.environ["ROOST_CONFIG"],
        ROOST_WEB__PORT="0",
        ROOST_LLM__PROVIDER="offline",
        ROOST_LIMITS__SHUTDOWN_GRACE_S="1",
    )
    return env


@pytest.fixture
async def daemon(home: Path) -> AsyncIterator[Daemon]:
    running = await start_daemon(offline_env(home))
    yield running
    await running.stop()


class Chat:
    """`roost chat` on pipes: write lines, read its output line by line."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.seen: list[str] = []

    @classmethod
    async def open(cls, home: Path, *args: str) -> Chat:
        proc = await asyncio.create_subprocess_exec(
            *ROOST, "chat", *args, env=offline_env(home),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        return cls(proc)

    async def say(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        await self.proc.stdin.drain()

    async def until(self, needle: str) -> str:
        """Read lines until one contains `needle`; return it."""
        assert self.proc.stdout is not None
        while True:
            raw = await asyncio.wait_for(self.proc.stdout.readline(), GUARD_S)
            assert raw, f"roost chat ended before {needle!r}: {self.seen}"
            self.seen.append(raw.decode())
            if needle in self.seen[-1]:
                return self.seen[-1]

    async def close(self) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        out, _ = await asyncio.wait_for(self.proc.communicate(), GUARD_S)
        assert self.proc.returncode == 0, self.seen
        return "".join(self.seen) + out.decode()


def job_id(confirmation: str) -> str:
    found = re.search(r"\(id (\w+)\)", confirmation)
    assert found, confirmation
    return found.group(1)


def fire_now(home: Path, job: str) -> None:
    """The job's time has come: what the clock would do, committed from this process,
    with the wake-up every job write sends the scheduler (`Database.notify` of
    `WAKE_TOPIC`, as SQLite's backend records it); without it the daemon would see the
    change only at its next periodic look."""
    with sqlite3.connect(home / "roost.db") as conn:
        conn.execute("UPDATE jobs SET next_run_ms = ? WHERE id = ?", (int(time.time() * 1000), job))
        conn.execute(
            "INSERT INTO storage_notify (topic, n) VALUES (?, 1)"
            " ON CONFLICT (topic) DO UPDATE SET n = n + 1",
            (WAKE_TOPIC,),
        )


def outbox(home: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(home / "roost.db") as conn:
        rows = conn.execute("SELECT channel, chat, state FROM outbox ORDER BY id").fetchall()
    return [(str(a), str(b), str(c)) for a, b, c in rows]


async def settled(home: Path, count: int) -> None:
    """Wait until `count` outbox entries are delivered (a readiness signal, guarded)."""
    deadline = time.monotonic() + GUARD_S
    while sum(1 for row in outbox(home) if row[2] == "delivered") < count:
        assert time.monotonic() < deadline, outbox(home)
        await asyncio.sleep(0.05)


async def test_a_reminder_set_in_the_terminal_is_printed_there_or_at_the_next_start(
    home: Path, daemon: Daemon
) -> None:
    chat = await Chat.open(home)
    await chat.say("/remind in 2 hours take the pills")
    confirmation = await chat.until("I'll remind you")
    assert "It will show in `roost chat`" in confirmation
    assert "not running" not in confirmation  # the daemon is up
    fire_now(home, job_id(confirmation))
    assert (await chat.until("take the pills")).strip() == "⏰ take the pills"
    await settled(home, 1)
    assert outbox(home) == [("cli", "terminal", "delivered")]
    await chat.say("/remind in 3 hours water the basil")  # the chat goes on after it
    later = job_id(await chat.until("I'll remind you"))
    await chat.close()
    fire_now(home, later)  # while no terminal is open
    await settled(home, 2)
    shown = await (await Chat.open(home)).close()
    assert "While you were away:\n⏰ water the basil\n" in shown
    assert "pills" not in shown  # shown before, not again
    assert "basil" not in await (await Chat.open(home)).close()  # once


async def test_without_a_daemon_the_confirmation_says_who_runs_it(home: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        *ROOST, "send", "/remind in 1 hour call mum", env=offline_env(home),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), GUARD_S)
    text = out.decode()
    assert proc.returncode == 0, err.decode()
    assert "I'll remind you" in text and "`roost chat --chat send`" in text
    assert "`roost serve` is not running now" in text
