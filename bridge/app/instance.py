"""One `roost serve` per home on SQLite, several on PostgreSQL: a lock file under ROOST_HOME.

`hold(home)` takes an exclusive `flock` on `$ROOST_HOME/roost.lock` (0600) and
writes this process's pid into it; the lock ends with the process (the
kernel drops it even after a crash, so a stale file never blocks a start).
A second daemon on the same home gets `InstanceBusy`, whose message names the
holder's pid and what to do. `hold(home, shared=True)` (`[database] url` is
PostgreSQL: instances that share one home and one database) takes the lock
SHARED: any number of such instances run together, and an exclusive holder
(a daemon on SQLite, `roost forget`) and they exclude each other; the pid
written is the last shared holder's. Operator commands do not take the lock; `held(home)`
tells whether a daemon runs (the terminal's /remind says so when none does).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_NAME = "roost.lock"


class InstanceBusy(Exception):
    """Another daemon holds this home."""


class InstanceLock:
    """The held lock; `release()` (or process exit) lets the next daemon start."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self._fd = path, fd

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = -1


def holder(fd: int) -> str:
    """The pid written in the lock file, or a placeholder while the holder is starting."""
    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return f"pid {text}" if text.isdigit() else "a process that is starting"


def hold(home: Path, *, shared: bool = False) -> InstanceLock:
    """Lock `home` for this process (with other shared holders when `shared`) or raise
    InstanceBusy naming the holder."""
    path = home / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        who = holder(fd)
        os.close(fd)
        raise InstanceBusy(
            f"another roost serve ({who}) is running on {home} (lock {path}); "
            "stop it first (systemctl stop roost) or set ROOST_HOME to another directory "
            "(instances share a home only when every one has [database] url = PostgreSQL)"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return InstanceLock(path, fd)


def held(home: Path) -> bool | None:
    """Whether a process holds `home`'s lock now (a `roost serve`, or `roost forget`
    for a moment); None when it cannot be told (no /proc/locks).

    Read from the kernel's lock table, never by trying the lock: a probe that
    took it, even shared and for a moment, could make a daemon starting at that
    instant fail with InstanceBusy.
    """
    try:
        inode = (home / LOCK_NAME).stat().st_ino
    except FileNotFoundError:
        return False
    except OSError:
        return None
    try:
        table = Path("/proc/locks").read_text()
    except OSError:
        return None
    for line in table.splitlines():
        # "1: FLOCK  ADVISORY  WRITE 4242 fe:00:2148561 0 EOF"; waiters carry "->"
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5].rsplit(":", 1)[-1] == str(inode):
            return True
    return False
