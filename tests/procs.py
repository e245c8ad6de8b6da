"""Whether a process has exited, read from /proc: one reading for every test that
watches a child, a daemon or a decoder go (a process that exits while its stat is
read raises ESRCH from the read: a CI run failed on that)."""

from __future__ import annotations


def gone(pid: int) -> bool:
    """Whether process `pid` has exited (reaped, a zombie, or dead)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):  # gone before, or while, it was read
        return True
