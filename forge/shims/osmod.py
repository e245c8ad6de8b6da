"""The `os` shim: listdir, scandir, walk, stat, makedirs, mkdir, remove/unlink,
rmdir, rename/replace and getcwd, every one through the path gate of the call's
workspace; `os.path` is the ospath shim. Nothing else of `os` exists here:
`environ`, `system`, `exec*`, `fork`, `kill`, `chmod`, `symlink`, descriptors
... raise an AttributeError that says why (forge.shims.common)."""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Iterator
from typing import Any

from forge.pathgate import PathDenied, PathGate
from forge.shims.common import ShimModule, StatResult, WalkBudget, text_path


class DirEntry:
    """One entry of os.scandir: name, path, is_file(), is_dir(), stat()."""

    __slots__ = ("_st", "name", "path")
    _st: os.stat_result
    name: str
    path: str

    def __init__(self, base: str, name: str, st: os.stat_result) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "path", posixpath.join(base, name))
        object.__setattr__(self, "_st", st)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("directory entries are read-only")

    def is_file(self, follow_symlinks: bool = True) -> bool:
        return stat.S_ISREG(self._st.st_mode)

    def is_dir(self, follow_symlinks: bool = True) -> bool:
        return stat.S_ISDIR(self._st.st_mode)

    def is_symlink(self) -> bool:
        return stat.S_ISLNK(self._st.st_mode)

    def stat(self, follow_symlinks: bool = True) -> StatResult:
        return StatResult(self._st)

    def __fspath__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f"<DirEntry {self.name!r}>"


class ScandirIterator:
    """What os.scandir returns: an iterator that is also a context manager."""

    __slots__ = ("_entries",)

    def __init__(self, entries: list[DirEntry]) -> None:
        self._entries = iter(entries)

    def __iter__(self) -> ScandirIterator:
        return self

    def __next__(self) -> DirEntry:
        return next(self._entries)

    def __enter__(self) -> ScandirIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._entries = iter(())


def make_os(gate: PathGate, ospath: ShimModule) -> ShimModule:
    def entries(path: Any) -> list[DirEntry]:
        base = text_path(path)
        return [DirEntry(base, name, st) for name, st in gate.scandir(base)]

    def scandir(path: Any = ".") -> ScandirIterator:
        return ScandirIterator(entries(path))

    def listdir(path: Any = ".") -> list[str]:
        return gate.listdir(text_path(path))

    def walk(
        top: Any = ".", topdown: bool = True, onerror: Any = None, followlinks: bool = False
    ) -> Iterator[tuple[str, list[str], list[str]]]:
        budget = WalkBudget()
        start = text_path(top)
        stack: list[tuple[str, int]] = [(start, 0)]
        later: list[tuple[str, list[str], list[str]]] = []
        while stack:
            where, depth = stack.pop()
            try:
                found = entries(where)
            except PathDenied:
                raise  # a rule, not a vanished directory: never skipped silently
            except OSError as exc:
                if onerror is not None:
                    onerror(exc)
                continue
            budget.spend(len(found), depth, start)
            dirs = [e.name for e in found if e.is_dir()]
            files = [e.name for e in found if not e.is_dir()]
            if topdown:
                yield where, dirs, files
            else:
                later.append((where, dirs, files))
            stack.extend((posixpath.join(where, d), depth + 1) for d in reversed(dirs))
        yield from reversed(later)

    def makedirs(name: Any, mode: int = 0o777, exist_ok: bool = False) -> None:
        gate.mkdir(text_path(name), parents=True, exist_ok=exist_ok)

    def mkdir(path: Any, mode: int = 0o777) -> None:
        gate.mkdir(text_path(path))

    def remove(path: Any) -> None:
        gate.remove(text_path(path))

    def rmdir(path: Any) -> None:
        gate.rmdir(text_path(path))

    def rename(src: Any, dst: Any) -> None:
        gate.rename(text_path(src), text_path(dst))

    def stat_(path: Any) -> StatResult:
        return StatResult(gate.stat(text_path(path)))

    def getcwd() -> str:
        return gate.root

    def fspath(path: Any) -> str:
        return text_path(path)

    return ShimModule(
        "os",
        {
            "path": ospath,
            "listdir": listdir,
            "scandir": scandir,
            "walk": walk,
            "stat": stat_,
            "makedirs": makedirs,
            "mkdir": mkdir,
            "remove": remove,
            "unlink": remove,
            "rmdir": rmdir,
            "rename": rename,
            "replace": rename,
            "getcwd": getcwd,
            "fspath": fspath,
            "sep": "/",
            "curdir": ".",
            "pardir": "..",
            "extsep": ".",
            "linesep": "\n",
            "name": "posix",
        },
    )
