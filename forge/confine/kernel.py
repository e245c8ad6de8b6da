"""The few raw kernel calls the confinement layers share (ctypes, no dependency):
`syscall`, prctl flags, close_range, death with the parent."""

from __future__ import annotations

import ctypes
import os
import platform
import signal

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG = 1
MAX_FD = 2**31 - 2  # os.closerange takes C ints
# prctl(2) through `syscall` where its number is known: a sandbox child then calls
# one foreign function only (each one's first call in a fresh child costs page faults)
SYS_PRCTL = {"x86_64": 157, "aarch64": 167}.get(platform.machine())


def syscall(nr: int, *args: object) -> int:
    res = libc.syscall(nr, *args)
    if res < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return int(res)


def check(res: int) -> None:
    """Raise the errno of a libc call that returned non-zero."""
    if res != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def close_range(first: int, last: int) -> None:
    """Close descriptors first..last. os.closerange is one close_range(2) call where
    the kernel has it (a loop elsewhere), and no foreign function: a fresh sandbox
    child copies fewer pages than through ctypes."""
    os.closerange(first, min(last, MAX_FD) + 1)


def prctl(option: int, arg: int) -> None:
    """prctl(option, arg, 0, 0, 0); OSError on failure."""
    if SYS_PRCTL is None:
        check(libc.prctl(option, arg, 0, 0, 0))
    else:
        syscall(SYS_PRCTL, option, arg, 0, 0, 0)


def die_with_parent(parent_pid: int) -> None:
    """SIGKILL this process when its parent (the helper) dies; exit now if it already has."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:
        os._exit(0)


def set_no_new_privs() -> None:
    prctl(PR_SET_NO_NEW_PRIVS, 1)
