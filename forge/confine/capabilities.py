"""Capabilities: empty the effective, permitted and inheritable sets in the child."""

from __future__ import annotations

import ctypes

from forge.confine.kernel import check, libc

PR_CAPBSET_DROP = 24


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def last_cap() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 63


def drop_capabilities(bounding: bool = False, last: int = 63) -> None:
    """Empty the effective, permitted and inheritable sets (root included), so root
    in the child no longer bypasses file permissions or RLIMIT_NPROC. The bounding
    set only matters across execve, which seccomp and no_new_privs already stop;
    `bounding=True` clears it too (about 40 extra syscalls)."""
    if bounding:
        for cap in range(last + 1):
            libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    header = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    check(libc.capset(ctypes.byref(header), data))
