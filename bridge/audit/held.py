"""The chain writer's short system calls, made while its thread keeps the GIL.

Each system call made through `os` or `fcntl` lets the GIL go around it; the
chain's writer then has to take it back from the loop, which may be running a
turn's Python meanwhile (up to the switch interval, 5 ms): a futex wake-up and
a context switch, for a call that took a microsecond. The calls here cannot
wait for long (an uncontended `flock` with `LOCK_NB`, a `write` or `pwrite` of
a few hundred bytes into the page cache), so they go through libc with
`ctypes.PyDLL`, which keeps the GIL. Whatever may wait (a lock another process
holds, `fdatasync`) still lets it go. Where libc's functions cannot be had,
`os` and `fcntl` do the same work as before.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
from collections.abc import Callable
from typing import Any


def _libc() -> Any:
    try:
        lib = ctypes.PyDLL(None, use_errno=True)
        for name in ("flock", "write", "pwrite"):
            getattr(lib, name)
    except (OSError, AttributeError):
        return None
    lib.flock.argtypes = [ctypes.c_int, ctypes.c_int]
    lib.flock.restype = ctypes.c_int
    lib.write.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
    lib.write.restype = ctypes.c_ssize_t
    lib.pwrite.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_long]
    lib.pwrite.restype = ctypes.c_ssize_t
    return lib


_LIB = _libc()


def _checked(call: Callable[..., int], *args: object) -> int:
    """`call(*args)`'s result; made again when a signal interrupted it (EINTR: as `os`
    does, PEP 475), an OSError for any other failure."""
    while True:
        result = call(*args)
        if result >= 0:
            return result
        code = ctypes.get_errno()
        if code != errno.EINTR:
            raise OSError(code, os.strerror(code))


def lock(fd: int) -> None:
    """`flock(fd, LOCK_EX)`: at once while no other process holds the lock (the GIL
    kept), else waiting for it with the GIL let go."""
    if _LIB is not None:
        while _LIB.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB) != 0:
            code = ctypes.get_errno()
            if code == errno.EINTR:
                continue
            if code != errno.EWOULDBLOCK:
                raise OSError(code, os.strerror(code))
            break  # held elsewhere: wait for it below
        else:
            return
    fcntl.flock(fd, fcntl.LOCK_EX)


def unlock(fd: int) -> None:
    """`flock(fd, LOCK_UN)` (never waits)."""
    if _LIB is None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return
    _checked(_LIB.flock, fd, fcntl.LOCK_UN)


def write_all(fd: int, data: bytes) -> None:
    """Every byte of `data` written to `fd` (at its end: the chain is opened to append)."""
    if _LIB is None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        return
    done = 0
    while done < len(data):
        rest = data[done:] if done else data
        done += _checked(_LIB.write, fd, rest, len(rest))


def pwrite(fd: int, data: bytes, offset: int) -> None:
    """`data` written whole at `offset`."""
    write: Callable[[int, bytes, int], int] = os.pwrite
    if _LIB is not None:
        write = lambda f, d, o: _checked(_LIB.pwrite, f, d, len(d), o)  # noqa: E731
    done = 0
    while done < len(data):
        done += write(fd, data[done:], offset + done)
