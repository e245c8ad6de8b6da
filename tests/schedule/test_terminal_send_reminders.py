"""A `/remind` set with `roost send --chat NAME` shows in the first `roost chat --chat NAME`.

The confirmation promises it "will show in `roost chat --chat NAME` (while it is
open, or the next time it starts)"; a chat `roost chat` never opened must keep
that promise too. Through the real processes: a daemon runs the job, the job's
time is moved to now in roost.db (`fire_now`, as the clock passing would), and
every wait is a readiness signal with a hang guard.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.schedule.test_terminal_reminders import (
    GUARD_S,
    ROOST,
    Chat,
    daemon,
    fire_now,
    job_id,
    offline_env,
    settled,
)
from tests.spine.test_daemon import Daemon

__all__ = ["daemon"]  # the fixture, imported for the tests below


async def send(home: Path, *args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        *ROOST, "send", *args, env=offline_env(home),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), GUARD_S)
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def test_a_reminder_sent_to_a_chat_never_opened_shows_when_it_opens(
    home: Path, daemon: Daemon
) -> None:
    confirmation = await send(home, "--chat", "fresh1", "/remind in 2 hours ping fresh1")
    assert "`roost chat --chat fresh1`" in confirmation
    fire_now(home, job_id(confirmation))
    await settled(home, 1)
    shown = await (await Chat.open(home, "--chat", "fresh1")).close()
    assert "While you were away:\n⏰ ping fresh1\n" in shown
    assert "ping fresh1" not in await (await Chat.open(home, "--chat", "fresh1")).close()
    assert "ping fresh1" not in await (await Chat.open(home)).close()  # only in its chat


async def test_the_default_send_chat_shows_it_too(home: Path, daemon: Daemon) -> None:
    confirmation = await send(home, "/remind in 1 hour stretch")
    assert "`roost chat --chat send`" in confirmation
    fire_now(home, job_id(confirmation))
    await settled(home, 1)
    shown = await (await Chat.open(home, "--chat", "send")).close()
    assert "While you were away:\n⏰ stretch\n" in shown
