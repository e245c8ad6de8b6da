"""The disk half of the pathlib shim: `Path` methods that go through the path
gate (exists, is_file, is_dir, stat, read/write text and bytes, open, touch,
mkdir, iterdir, glob/rglob with bounds, unlink, rmdir, rename/replace, resolve,
cwd). One class per call, bound to that call's gate by closure."""

from __future__ import annotations

import fnmatch
import os
import posixpath
import stat
from collections.abc import Iterator
from typing import IO, Any

from forge.pathgate import PathDenied, PathGate
from forge.shims.common import StatResult, WalkBudget, text_path


def glob_parts(pattern: Any) -> list[str]:
    """A relative glob pattern's components; `..` and absolute patterns refused."""
    text = text_path(pattern)
    if text.startswith("/"):
        raise PathDenied(
            f"absolute glob pattern {text!r} refused; use a pattern relative to the path"
        )
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if not parts:
        raise ValueError(f"Unacceptable pattern: {text!r}")
    if ".." in parts:
        raise PathDenied(f"'..' is not allowed in the glob pattern {text!r}")
    return parts


def glob_walk(
    gate: PathGate, base: str, parts: list[str], budget: WalkBudget, depth: int = 0
) -> Iterator[str]:
    """Relative names below `base` matching `parts` ("**" is any depth); no links."""
    if not parts:
        yield ""
        return
    head, rest = parts[0], parts[1:]
    try:
        found = gate.scandir(base)
    except (FileNotFoundError, NotADirectoryError):
        return
    budget.spend(len(found), depth, base)
    dirs = [name for name, st in found if stat.S_ISDIR(st.st_mode)]
    if head == "**":
        yield from glob_walk(gate, base, rest, budget, depth) if rest else [""]
        for d in dirs:
            for sub in glob_walk(gate, posixpath.join(base, d), parts, budget, depth + 1):
                yield posixpath.join(d, sub) if sub else d
        return
    for name, st in found:
        if not fnmatch.fnmatchcase(name, head):
            continue
        if not rest:
            yield name
        elif stat.S_ISDIR(st.st_mode):
            for sub in glob_walk(gate, posixpath.join(base, name), rest, budget, depth + 1):
                yield posixpath.join(name, sub) if sub else name


def bind_path(pure: type, gate: PathGate) -> type:
    """The `Path` class of one call."""
    root = gate.root

    class Path(pure):  # type: ignore[misc]
        """A workspace path: relative to the workspace, or absolute inside it."""

        __slots__ = ()

        @classmethod
        def cwd(cls) -> Any:
            return cls(root)

        def absolute(self) -> Any:
            return self if self.is_absolute() else type(self)(root, self)

        def resolve(self, strict: bool = False) -> Any:
            full = posixpath.normpath(posixpath.join(root, str(self)))
            if full != root and not full.startswith(root + "/"):
                raise PathDenied(f"{str(self)!r} resolves outside the workspace")
            if strict:
                gate.stat(full)
            return type(self)(full)

        def _mode(self) -> int | None:
            try:
                return gate.stat(str(self)).st_mode
            except (FileNotFoundError, NotADirectoryError):
                return None

        def exists(self) -> bool:
            return self._mode() is not None

        def is_file(self) -> bool:
            mode = self._mode()
            return mode is not None and stat.S_ISREG(mode)

        def is_dir(self) -> bool:
            mode = self._mode()
            return mode is not None and stat.S_ISDIR(mode)

        def stat(self) -> StatResult:
            return StatResult(gate.stat(str(self)))

        def open(
            self,
            mode: str = "r",
            buffering: int = -1,
            encoding: str | None = None,
            errors: str | None = None,
            newline: str | None = None,
        ) -> IO[Any]:
            return gate.open(str(self), mode, encoding, errors, newline)

        def read_text(self, encoding: str | None = None, errors: str | None = None) -> str:
            with gate.open(str(self), "r", encoding, errors) as f:
                return str(f.read())

        def read_bytes(self) -> bytes:
            with gate.open(str(self), "rb") as f:
                return bytes(f.read())

        def write_text(
            self,
            data: str,
            encoding: str | None = None,
            errors: str | None = None,
            newline: str | None = None,
        ) -> int:
            if not isinstance(data, str):
                raise TypeError(f"data must be str, not {type(data).__name__}")
            with gate.open(str(self), "w", encoding, errors, newline) as f:
                return int(f.write(data))

        def write_bytes(self, data: bytes) -> int:
            view = bytes(data)
            with gate.open(str(self), "wb") as f:
                return int(f.write(view))

        def touch(self, mode: int = 0o666, exist_ok: bool = True) -> None:
            flags = os.O_WRONLY | os.O_CREAT | (0 if exist_ok else os.O_EXCL)
            fd = gate.open_fd(str(self), flags)
            try:
                os.utime(fd)
            finally:
                os.close(fd)

        def mkdir(self, mode: int = 0o777, parents: bool = False, exist_ok: bool = False) -> None:
            gate.mkdir(str(self), parents=parents, exist_ok=exist_ok)

        def iterdir(self) -> Iterator[Any]:
            for name in gate.listdir(str(self)):
                yield self / name

        def glob(self, pattern: str) -> Iterator[Any]:
            for rel in glob_walk(gate, str(self), glob_parts(pattern), WalkBudget()):
                yield self / rel if rel else self

        def rglob(self, pattern: str) -> Iterator[Any]:
            return self.glob("**/" + text_path(pattern))

        def unlink(self, missing_ok: bool = False) -> None:
            try:
                gate.remove(str(self))
            except FileNotFoundError:
                if not missing_ok:
                    raise

        def rmdir(self) -> None:
            gate.rmdir(str(self))

        def rename(self, target: Any) -> Any:
            gate.rename(str(self), text_path(target))
            return type(self)(target)

        replace = rename

    return Path
