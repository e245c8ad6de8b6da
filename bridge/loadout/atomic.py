"""Atomic file writes for the loadout: temp file, fsync, rename, fsync the directory.

Readers see the old file or the new one, never half of either. If any step
fails the write failed and the error propagates; the temp file is removed.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

TMP_PREFIX = ".tmp-"


def write_text(path: Path, text: str, mode: int = 0o600) -> None:
    """Replace `path` with `text` (UTF-8) atomically; the new file gets `mode`."""
    write_bytes(path, text.encode("utf-8"), mode)


def write_bytes(path: Path, data: bytes, mode: int = 0o600) -> None:
    directory = path.parent
    tmp = directory / f"{TMP_PREFIX}{path.name}.{os.getpid()}.{os.urandom(4).hex()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(directory)


def remove(path: Path) -> bool:
    """Delete `path` durably; False if it was not there."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    fsync_dir(path.parent)
    return True


def fsync_dir(directory: Path) -> None:
    dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def remove_orphan_temps(directory: Path) -> int:
    """Delete temp files a crash left behind; returns how many."""
    count = 0
    if not directory.is_dir():
        return 0
    for entry in directory.glob(TMP_PREFIX + "*"):
        with contextlib.suppress(OSError):
            entry.unlink()
            count += 1
    return count
