"""The `os.path` shim: posixpath's pure string functions, and the queries that
touch the disk (exists, isfile, isdir, getsize, getmtime) through the path gate.
A path outside the workspace, through `..` or a symlink, is a PermissionError
even for `exists`; a missing file is simply False."""

from __future__ import annotations

import posixpath
import stat
from typing import Any

from forge.pathgate import PathGate
from forge.shims.common import ShimModule, text_path

PURE = ("basename", "dirname", "isabs", "join", "normpath", "split", "splitext", "commonpath")


def _pure(fn: Any) -> Any:
    def call(*args: Any) -> Any:
        return fn(*[text_path(a) if not isinstance(a, list | tuple) else a for a in args])

    call.__name__ = fn.__name__
    return call


def make_ospath(gate: PathGate) -> ShimModule:
    root = gate.root

    def _mode(path: Any) -> int | None:
        try:
            return gate.stat(text_path(path)).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return None

    def exists(path: Any) -> bool:
        return _mode(path) is not None

    def isfile(path: Any) -> bool:
        mode = _mode(path)
        return mode is not None and stat.S_ISREG(mode)

    def isdir(path: Any) -> bool:
        mode = _mode(path)
        return mode is not None and stat.S_ISDIR(mode)

    def getsize(path: Any) -> int:
        return gate.stat(text_path(path)).st_size

    def getmtime(path: Any) -> float:
        return gate.stat(text_path(path)).st_mtime

    def abspath(path: Any) -> str:
        return posixpath.normpath(posixpath.join(root, text_path(path)))

    def relpath(path: Any, start: Any = None) -> str:
        base = root if start is None else abspath(start)
        return posixpath.relpath(abspath(path), base)

    names: dict[str, Any] = {n: _pure(getattr(posixpath, n)) for n in PURE}
    names.update(
        exists=exists,
        isfile=isfile,
        isdir=isdir,
        getsize=getsize,
        getmtime=getmtime,
        abspath=abspath,
        relpath=relpath,
        sep="/",
        curdir=".",
        pardir="..",
        extsep=".",
    )
    return ShimModule("os.path", names)
