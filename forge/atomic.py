"""Atomic file writes: temp file in the same directory, fsync, rename, fsync dir.
Private by default: files 0600, directories made here 0700 (whatever the umask)."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

TMP_PREFIX = ".tmp-"


PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700


def private_dir(path: Path) -> None:
    """Make `path` (and any missing parent) a directory only the owner can enter;
    an existing `path` is tightened to 0700."""
    missing = []
    cur = path
    while not cur.exists():
        missing.append(cur)
        cur = cur.parent
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):
            d.mkdir(mode=PRIVATE_DIR)
    os.chmod(path, PRIVATE_DIR)


def private_file(path: Path) -> None:
    """Create `path` empty and 0600 unless it exists; tighten it to 0600.

    An existing file is never opened for reading or writing: closing such a
    descriptor of a database file drops every POSIX lock this process holds on it,
    so the process's open SQLite connections would lose their shared locks, and
    another process closing its last connection would delete the -wal and -shm
    files under them (they then fail with "disk I/O error"). An `O_PATH` descriptor
    holds no lock to drop; through it a symlink is refused, as `O_NOFOLLOW` did.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW
    try:
        os.close(os.open(path, flags, PRIVATE_FILE))  # new: no other descriptor of it yet
    except FileExistsError:
        pass
    else:
        return
    fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.ELOOP, "not a regular file", str(path))
        if stat.S_IMODE(st.st_mode) != PRIVATE_FILE:
            os.chmod(f"/proc/self/fd/{fd}", PRIVATE_FILE)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes, mode: int = PRIVATE_FILE) -> None:
    """Replace `path` with `data` so readers see the old or the new file, never half."""
    directory = path.parent
    tmp = directory / f"{TMP_PREFIX}{path.name}.{os.getpid()}.{os.urandom(4).hex()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.close(fd)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(directory)


def fsync_dir(directory: Path) -> None:
    dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def remove_orphan_temps(directory: Path) -> int:
    """Delete temp files a crash left behind; returns how many."""
    count = 0
    for entry in directory.glob(TMP_PREFIX + "*"):
        with contextlib.suppress(OSError):
            entry.unlink()
            count += 1
    return count
