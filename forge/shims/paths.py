"""The `pathlib` shim: a `Path` class (and `PurePath`) made per call, bound to
that call's path gate. Pure operations (`/`, name, stem, suffix, parent, parts,
with_suffix, relative_to ...) work on strings like PurePosixPath; every
operation that touches the disk goes through the gate, so a Path outside the
workspace, through `..` or through a symlink is a PermissionError. It cannot be
subclassed (a tool class could otherwise stand in for it)."""

from __future__ import annotations

import fnmatch
import posixpath
from typing import Any

from forge.pathgate import PathGate
from forge.shims.common import ShimModule, text_path
from forge.shims.pathops import bind_path


def _parse(args: tuple[Any, ...]) -> tuple[str, ...]:
    parts: list[str] = []
    for arg in args:
        text = text_path(arg)
        if text.startswith("/"):
            parts = ["/"]
        parts.extend(p for p in text.split("/") if p not in ("", "."))
    return tuple(parts)


def _check_suffix(suffix: str) -> None:
    if suffix and (not suffix.startswith(".") or suffix == "." or "/" in suffix):
        raise ValueError(f"Invalid suffix {suffix!r}")


class PurePath:
    """String-only path operations (POSIX); never touches the disk."""

    __slots__ = ("_parts",)
    _parts: tuple[str, ...]

    def __init__(self, *args: Any) -> None:
        object.__setattr__(self, "_parts", _parse(args))

    def __init_subclass__(cls, **kw: Any) -> None:
        if not cls.__module__.startswith("forge."):
            raise TypeError("Path cannot be subclassed by a tool")
        super().__init_subclass__(**kw)

    def _new(self, parts: tuple[str, ...]) -> Any:
        obj = object.__new__(type(self))
        object.__setattr__(obj, "_parts", parts)
        return obj

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("paths are read-only")

    def __str__(self) -> str:
        if not self._parts:
            return "."
        if self._parts[0] == "/":
            return "/" + "/".join(self._parts[1:])
        return "/".join(self._parts)

    __fspath__ = __str__

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PurePath) and self._parts == other._parts

    def __hash__(self) -> int:
        return hash(self._parts)

    def __lt__(self, other: PurePath) -> bool:
        return self._parts < other._parts

    def __le__(self, other: PurePath) -> bool:
        return self._parts <= other._parts

    def __gt__(self, other: PurePath) -> bool:
        return self._parts > other._parts

    def __ge__(self, other: PurePath) -> bool:
        return self._parts >= other._parts

    def __truediv__(self, other: Any) -> Any:
        return self._new(_parse((str(self), other)))

    def __rtruediv__(self, other: Any) -> Any:
        return self._new(_parse((other, str(self))))

    def joinpath(self, *others: Any) -> Any:
        return self._new(_parse((str(self), *others)))

    @property
    def parts(self) -> tuple[str, ...]:
        return self._parts

    @property
    def name(self) -> str:
        return "" if not self._parts or self._parts == ("/",) else self._parts[-1]

    @property
    def suffix(self) -> str:
        name = self.name
        i = name.rfind(".")
        return name[i:] if 0 < i < len(name) - 1 else ""

    @property
    def suffixes(self) -> list[str]:
        name = self.name
        if name.endswith("."):
            return []
        return ["." + s for s in name.lstrip(".").split(".")[1:]]

    @property
    def stem(self) -> str:
        name, suffix = self.name, self.suffix
        return name[: len(name) - len(suffix)] if suffix else name

    @property
    def parent(self) -> Any:
        if not self._parts or self._parts == ("/",):
            return self
        return self._new(self._parts[:-1])

    @property
    def parents(self) -> tuple[Any, ...]:
        out, cur = [], self
        while cur.parent != cur:
            cur = cur.parent
            out.append(cur)
        return tuple(out)

    @property
    def anchor(self) -> str:
        return "/" if self.is_absolute() else ""

    def is_absolute(self) -> bool:
        return bool(self._parts) and self._parts[0] == "/"

    def as_posix(self) -> str:
        return str(self)

    def with_name(self, name: str) -> Any:
        if not self.name or not name or "/" in name or name == ".":
            raise ValueError(f"Invalid name {name!r}")
        return self._new((*self._parts[:-1], name))

    def with_stem(self, stem: str) -> Any:
        return self.with_name(stem + self.suffix)

    def with_suffix(self, suffix: str) -> Any:
        _check_suffix(suffix)
        if not self.name:
            raise ValueError(f"{str(self)!r} has an empty name")
        return self.with_name(self.stem + suffix)

    def relative_to(self, *other: Any) -> Any:
        base = _parse(other)
        if self._parts[: len(base)] != base:
            raise ValueError(f"{str(self)!r} is not in the subpath of {posixpath.join(*other)!r}")
        return self._new(self._parts[len(base) :])

    def is_relative_to(self, *other: Any) -> bool:
        base = _parse(other)
        return self._parts[: len(base)] == base

    def match(self, pattern: str) -> bool:
        pat = _parse((pattern,))
        if not pat or len(pat) > len(self._parts):
            return False
        if pat[0] == "/" and len(pat) != len(self._parts):
            return False
        tail = self._parts[-len(pat) :]
        return all(fnmatch.fnmatchcase(p, q) for p, q in zip(tail, pat, strict=True))


def make_pathlib(gate: PathGate) -> ShimModule:
    """`pathlib` for one call: PurePath, PurePosixPath and a gate-bound Path."""
    path_class = bind_path(PurePath, gate)
    names = {"Path": path_class, "PosixPath": path_class, "PurePath": PurePath}
    names["PurePosixPath"] = PurePath
    return ShimModule("pathlib", names)
