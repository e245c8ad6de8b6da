"""Walking and removing a folder tree of any depth and any path length.

`os.walk` calls itself once per level (Python's recursion limit ends it near 1,000
levels with a `RecursionError`) and hands out full path strings (the kernel refuses
one longer than 4,096 characters, which `os.walk` skips without a word), and
`shutil.rmtree` recurses the same way. A tenant's tree could hold both (a tool built
one by renames before the path gate checked them), and then `roost forget` could
never finish, `backup` and `export` crashed or left files out (issue 26's attacker
pass). Here one directory descriptor is open at a time: a folder is entered by name
relative to its parent's descriptor (O_NOFOLLOW: a link is never followed) and left
by "..", checked to be the folder it was entered from (a folder moved meanwhile ends
the walk with `TreeChanged`). No path string is longer than one name.

`walk(root)` yields every entry below `root` as an `Entry` (its parts relative to
`root`, its `lstat`, and the descriptor of the folder holding it, open until the walk
goes on), each folder's entries in name order, a folder's before its contents;
`skipped` collects the folders that could not be read instead of raising.
`remove_tree(root)` deletes `root` and everything below it. `until_still(job)` runs
a whole walk's work again when a folder moved under it (`TreeChanged`), up to
`TRIES` times in all.
"""

from __future__ import annotations

import errno
import operator
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
GONE = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)  # removed, or replaced by a file or link
TRIES = 3  # `until_still`: a walk's work, in all, while folders keep moving under it
_T = TypeVar("_T")


class TreeChanged(OSError):
    """A folder was moved while the walk was inside it: what was walked is incomplete."""


@dataclass(frozen=True, slots=True)
class Entry:
    parts: tuple[str, ...]  # the path below the walk's root, this entry's name last
    st: os.stat_result  # its lstat
    dir_fd: int  # the folder holding it: open until the walk goes on

    @property
    def name(self) -> str:
        return self.parts[-1]

    @property
    def rel(self) -> str:
        return "/".join(self.parts)

    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.st.st_mode)

    def is_file(self) -> bool:
        return stat.S_ISREG(self.st.st_mode)

    def open(self) -> int:
        """A read-only descriptor of this file (no link followed); the caller closes it."""
        return os.open(self.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.dir_fd)


@dataclass
class _Level:
    parts: tuple[str, ...]
    ident: tuple[int, int]  # (st_dev, st_ino) of the folder
    folders: list[tuple[str, tuple[int, int]]]  # still to enter, the next one last


_name = operator.attrgetter("name")


def _ident(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _move(old: int, new: int) -> int:
    os.close(old)
    return new


def _up(fd: int, expected: tuple[int, int]) -> int:
    """The parent of the folder open on `fd`, which must be `expected` (then `fd` is
    closed; on `TreeChanged` it is left open)."""
    parent = os.open("..", _DIR, dir_fd=fd)
    if _ident(os.fstat(parent)) != expected:
        os.close(parent)  # `fd` stays the caller's to close
        raise TreeChanged(errno.ESTALE, "a folder was moved while it was being walked")
    return _move(fd, parent)


def walk(
    root: Path | str,
    *,
    prune: Callable[[Entry], bool] | None = None,
    skipped: list[tuple[str, OSError]] | None = None,
) -> Iterator[Entry]:
    """Every entry below `root` (a missing root: none). `prune(entry)` True: a folder's
    contents are not walked. `skipped`: (relative path, error) of each folder that could
    not be opened or listed is added there; None: the error is raised."""
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    levels: list[_Level] = []
    parts: tuple[str, ...] = ()
    ident = _ident(os.fstat(fd))
    try:
        while True:
            folders: list[tuple[str, tuple[int, int]]] = []
            try:
                with os.scandir(fd) as listing:
                    found = sorted(listing, key=_name)
            except OSError as exc:
                if skipped is None:
                    raise
                skipped.append(("/".join(parts) or ".", exc))
                found = []
            for item in found:
                name = item.name
                try:
                    st = item.stat(follow_symlinks=False)  # fstatat on the folder's fd
                except FileNotFoundError:
                    continue
                entry = Entry((*parts, name), st, fd)
                yield entry
                if stat.S_ISDIR(st.st_mode) and not (prune is not None and prune(entry)):
                    folders.append((name, _ident(st)))
            folders.reverse()
            levels.append(_Level(parts, ident, folders))
            while True:  # the next folder to enter: climbing back up as levels run out
                while levels and not levels[-1].folders:
                    levels.pop()
                    if levels:
                        fd = _up(fd, levels[-1].ident)
                if not levels:
                    return
                name, want = levels[-1].folders.pop()
                try:
                    inner = os.open(name, _DIR, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in GONE:
                        continue
                    if skipped is None:
                        raise
                    skipped.append(("/".join((*levels[-1].parts, name)), exc))
                    continue
                if _ident(os.fstat(inner)) != want:  # replaced since it was listed
                    os.close(inner)
                    continue
                fd = _move(fd, inner)
                parts, ident = (*levels[-1].parts, name), want
                break
    finally:
        os.close(fd)


def until_still(job: Callable[[], _T]) -> _T:
    """`job()`, run again from its start each time a folder moves under its walk (a
    tool renaming its folders meanwhile); the last `TreeChanged` after `TRIES` runs."""
    for _ in range(TRIES - 1):
        try:
            return job()
        except TreeChanged:
            continue
    return job()


def remove_tree(root: Path | str) -> None:
    """Delete `root` and everything below it (links are removed, never followed); a
    missing root is no error."""
    try:
        fd = os.open(root, _DIR)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return
        if exc.errno in (errno.ENOTDIR, errno.ELOOP):
            os.unlink(root)
            return
        raise
    levels = [_Level((), _ident(os.fstat(fd)), [])]
    try:
        while True:
            level = levels[-1]
            if not level.folders:  # empty its files, list its folders (again, if new came)
                for name in os.listdir(fd):
                    try:
                        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        level.folders.append((name, _ident(st)))
                    else:
                        os.unlink(name, dir_fd=fd)
                if not level.folders:  # this folder is empty: remove it from its parent
                    if len(levels) == 1:
                        break
                    levels.pop()
                    fd = _up(fd, levels[-1].ident)
                    os.rmdir(level.parts[-1], dir_fd=fd)
                    continue
            name, want = level.folders.pop()
            try:
                inner = os.open(name, _DIR, dir_fd=fd)
            except OSError as exc:
                if exc.errno == errno.ENOENT:
                    continue
                if exc.errno in (errno.ENOTDIR, errno.ELOOP):  # now a file or a link
                    os.unlink(name, dir_fd=fd)
                    continue
                raise
            if _ident(os.fstat(inner)) != want:
                os.close(inner)
                level.folders.append(
                    (name, _ident(os.stat(name, dir_fd=fd, follow_symlinks=False)))
                )
                continue
            fd = _move(fd, inner)
            levels.append(_Level((*level.parts, name), want, []))
    finally:
        os.close(fd)
    os.rmdir(root)
