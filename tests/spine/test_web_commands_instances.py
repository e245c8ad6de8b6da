"""Two instances sharing a home keep every command of one chat, and nothing is left per chat.

Several `roost serve` instances share `ROOST_HOME` (docs/scaling.md), so two of them
can keep a command of the same chat at the same moment. Each add reads the chat's
file, adds its entry and renames a new file over it: before, the later rename
dropped the entry the other instance had just written. Two `CommandLog`s on one
folder stand for the two instances (an `flock` is per open file, so two in one
process exclude each other as two processes do); one of them is held between its
read and its write, and the other's add must wait for it instead of being lost.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

from bridge.channels.web.commandlog import LOCK, CommandLog, Sent
from bridge.core.sessions import SessionKey
from tests.waits import until

KEY = SessionKey("alice", "web", "c")


def waiting_on(path: Path) -> bool:
    """Whether some add waits for the flock on `path` (a "->" line of /proc/locks)."""
    try:
        inode = os.stat(path).st_ino
    except FileNotFoundError:
        return False
    with open("/proc/locks") as locks:
        return any("->" in line and line.split()[-3].endswith(f":{inode}") for line in locks)


def asked(n: int) -> Sent:
    return Sent(conversation=1, at=float(n), asked=f"/remind {n}", reply="ok")


async def test_two_instances_adding_to_one_chat_at_once_keep_both(tmp_path: Path) -> None:
    first, second = CommandLog(lambda _t: tmp_path), CommandLog(lambda _t: tmp_path)
    await first.add(KEY, asked(0), [1])
    have_read, go_on = threading.Event(), threading.Event()
    reads = first._read

    def held_read(path: Path) -> list[Sent]:
        entries = reads(path)
        have_read.set()
        go_on.wait()  # the first instance is between its read and its write
        return entries

    first._read = held_read  # type: ignore[method-assign]
    try:
        one = asyncio.create_task(first.add(KEY, asked(1), [1]))
        await until(have_read.is_set, "the first instance's read")
        two = asyncio.create_task(second.add(KEY, asked(2), [1]))
        await until(lambda: two.done() or waiting_on(tmp_path / LOCK), "the second add")
    finally:
        go_on.set()
    await asyncio.gather(one, two)
    kept = [e.asked for e in await second.entries(KEY)]
    assert kept == ["/remind 0", "/remind 1", "/remind 2"]


async def test_adds_in_many_chats_leave_nothing_per_chat(tmp_path: Path) -> None:
    log = CommandLog(lambda _t: tmp_path)
    for n in range(40):  # chat ids are the client's to make up
        await log.add(SessionKey("alice", "web", f"c{n}"), asked(n), [1])
    assert len(log.adding) == 0
    names = sorted(os.listdir(tmp_path))
    assert [n for n in names if not n.endswith(".jsonl")] == [LOCK]
