"""Atomic file writes: temp file in the same directory, fsync, rename, fsync dir."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

TMP_PREFIX = ".tmp-"


def write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
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
