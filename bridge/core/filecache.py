"""A stat-checked cache of small files and directory listings.

`read(path)` returns the file's text (None if missing) and re-reads only when
the file's identity changed (inode, size, mtime, ctime); `listdir(path)`
does the same for a directory's entry names, and `stat_key(path)` for the
stat key itself. An unchanged file costs one `stat` call; with a `DirWatch`
(inotify, `bridge.core.dirwatch`) none at all while its directory reported
no event since the file was last checked. A file the watch cannot vouch for
is still checked with `stat` every time: one in a directory it cannot watch,
a symbolic link (its target may live elsewhere), a file with more than one
hard link (a write through another link is reported to another directory), or
a directory's own stat key (its parent hears nothing of its entries). A missing
file waits only on its directory's entries (`DirWatch.generations`): files
written beside it, such as a database's log, do not make it checked again. Writes
through a shared memory mapping raise no inotify event; nothing here maps.
`sig(path)` is the stat key used to detect changes.
"""

from __future__ import annotations

import os
import stat as st_mode
from pathlib import Path
from typing import NamedTuple

from bridge.core.dirwatch import DirWatch

StatKey = tuple[int, int, int, int] | None


class _Seen(NamedTuple):
    """A path's stat key and the generation of its directory when it was taken (None:
    the watch cannot vouch for it; `stat` it next time)."""

    key: StatKey
    gen: int | None
    directory: str = ""  # whose generation `gen` is
    entries: bool = False  # `gen` is the directory's entries generation (`key` is None)


def sig(path: Path | str) -> StatKey:
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class FileCache:
    """Texts and listings keyed by path; safe to share between tenants (keys are paths).

    `watch`: a `DirWatch` to skip the `stat` of files whose directory saw no change
    (the composition root owns it and closes it)."""

    def __init__(self, max_entries: int = 4096, watch: DirWatch | None = None) -> None:
        self._texts: dict[str, tuple[_Seen, str | None]] = {}
        self._dirs: dict[str, tuple[_Seen, tuple[str, ...]]] = {}
        self._keys: dict[str, _Seen] = {}
        self._max = max_entries
        self._watch = watch
        self.reads = 0  # files actually opened (for tests and the benchmark)
        self.stats = 0  # stat calls made (for tests and the benchmark)

    def _fresh(self, seen: _Seen) -> bool:
        """Whether nothing changed in its directory (its entries, for a missing file)
        since `seen` was taken."""
        if seen.gen is None or self._watch is None:
            return False
        both = self._watch.generations(seen.directory)
        return both is not None and both[seen.entries] == seen.gen

    def _check(self, path: str, directory: str) -> _Seen:
        """The stat key of `path` now, with the generation taken before it (a change
        after the `stat` moves the generation, so it is seen next time)."""
        both = self._watch.generations(directory) if self._watch is not None else None
        gen = None if both is None else both[0]
        self.stats += 1
        try:
            found = os.lstat(path)
            if st_mode.S_ISLNK(found.st_mode):
                gen, found = None, os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            if both is None or gen is None:  # not watched, or a dangling link
                return _Seen(None, None, directory)
            return _Seen(None, both[1], directory, entries=True)
        if st_mode.S_ISDIR(found.st_mode):
            if directory != path:  # its entries change its stat, and only it hears of them
                gen = None
        elif found.st_nlink > 1:
            gen = None
        key = (found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)
        return _Seen(key, gen, directory)

    def stat_key(self, path: Path | str) -> StatKey:
        """`sig(path)`, without a `stat` while the watch vouches for it."""
        key = str(path)
        hit = self._keys.get(key)
        if hit is not None and self._fresh(hit):
            return hit.key
        seen = self._check(key, os.path.dirname(key))
        if len(self._keys) >= self._max:
            self._keys.clear()
        self._keys[key] = seen
        return seen.key

    def read(self, path: Path | str) -> str | None:
        key = str(path)
        hit = self._texts.get(key)
        if hit is not None and self._fresh(hit[0]):
            return hit[1]
        seen = self._check(key, os.path.dirname(key))
        if hit is not None and hit[0].key == seen.key and seen.key is not None:
            self._texts[key] = (seen, hit[1])
            return hit[1]
        text = None
        if seen.key is not None:
            self.reads += 1
            text = _read(key)
        if len(self._texts) >= self._max:
            self._texts.clear()
        # the stat taken before reading: a change during the read shows up next time
        kept = seen if text is not None or seen.key is None else _Seen(None, None)
        self._texts[key] = (kept, text)
        return text

    def listdir(self, path: Path | str) -> tuple[str, ...]:
        key = str(path)
        hit = self._dirs.get(key)
        if hit is not None and self._fresh(hit[0]):
            return hit[1]
        parent = os.path.dirname(key)
        if hit is not None and hit[0].key is None and hit[0].directory == parent:
            seen = self._check(key, parent)  # it was missing: its parent says when it comes
            if seen.key is not None:
                seen = self._check(key, key)  # it came: watched from now on
        else:
            seen = self._check(key, key)  # a directory's own events change its generation
            if seen.key is None and seen.gen is None and self._watch is not None:
                again = self._check(key, parent)  # missing, so not watched: its creation
                if again.key is None:  # is an event of its parent
                    seen = again
        if hit is not None and hit[0].key == seen.key:
            self._dirs[key] = (seen, hit[1])
            return hit[1]
        try:
            names = tuple(sorted(os.listdir(key)))
        except (FileNotFoundError, NotADirectoryError):
            names = ()
        self._dirs[key] = (seen, names)
        return names


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return None


class NoCache(FileCache):
    """Reads every time (the benchmark's baseline and `--no-cache` checks)."""

    def stat_key(self, path: Path | str) -> StatKey:
        return sig(path)

    def read(self, path: Path | str) -> str | None:
        self.reads += 1
        return _read(str(path))

    def listdir(self, path: Path | str) -> tuple[str, ...]:
        try:
            return tuple(sorted(os.listdir(path)))
        except (FileNotFoundError, NotADirectoryError):
            return ()
