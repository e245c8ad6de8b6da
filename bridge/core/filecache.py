"""A stat-checked cache of small files and directory listings.

`read(path)` returns the file's text (None if missing) and re-reads only when
the file's identity changed (inode, size, mtime, ctime); `listdir(path)`
does the same for a directory's entry names. An unchanged file costs one
`stat` call. `sig(path)` is the stat key used to detect changes.
"""

from __future__ import annotations

import os
from pathlib import Path

StatKey = tuple[int, int, int, int] | None


def sig(path: Path | str) -> StatKey:
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class FileCache:
    """Texts and listings keyed by path; safe to share between tenants (keys are paths)."""

    def __init__(self, max_entries: int = 4096) -> None:
        self._texts: dict[str, tuple[StatKey, str | None]] = {}
        self._dirs: dict[str, tuple[StatKey, tuple[str, ...]]] = {}
        self._max = max_entries
        self.reads = 0  # files actually opened (for tests and the benchmark)

    def read(self, path: Path | str) -> str | None:
        key = str(path)
        stat = sig(key)
        hit = self._texts.get(key)
        if hit is not None and hit[0] == stat:
            return hit[1]
        text = None
        if stat is not None:
            self.reads += 1
            text = _read(key)
        if len(self._texts) >= self._max:
            self._texts.clear()
        # the stat taken before reading: a change during the read shows up next time
        self._texts[key] = (stat if text is not None else None, text)
        return text

    def listdir(self, path: Path | str) -> tuple[str, ...]:
        key = str(path)
        stat = sig(key)
        hit = self._dirs.get(key)
        if hit is not None and hit[0] == stat:
            return hit[1]
        try:
            names = tuple(sorted(os.listdir(key)))
        except (FileNotFoundError, NotADirectoryError):
            names = ()
        self._dirs[key] = (stat, names)
        return names


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return None


class NoCache(FileCache):
    """Reads every time (the benchmark's baseline and `--no-cache` checks)."""

    def read(self, path: Path | str) -> str | None:
        self.reads += 1
        return _read(str(path))

    def listdir(self, path: Path | str) -> tuple[str, ...]:
        try:
            return tuple(sorted(os.listdir(path)))
        except (FileNotFoundError, NotADirectoryError):
            return ()
