"""What the file shims share: the module-like namespace that names what is left
out, the stat result (size and mtime only), and the bounds on walking a tree."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from forge.pathgate import PathDenied

MAX_WALK_ENTRIES = 20_000  # entries one walk or glob may visit
MAX_WALK_DEPTH = 64  # directory levels below its start

_ENV = (
    "environment variables are not available to tools; "
    "declare a secret in SECRETS and use secret(name)"
)
_WHY: Mapping[str, str] = {
    "environ": _ENV,
    "environb": _ENV,
    "getenv": _ENV,
    "putenv": _ENV,
    "unsetenv": _ENV,
    "system": "tools cannot run programs",
    "popen": "tools cannot run programs",
    "fork": "tools cannot start processes",
    "kill": "tools cannot signal processes",
    "chmod": "tools cannot change permissions",
    "chown": "tools cannot change owners",
    "symlink": "tools cannot create links",
    "link": "tools cannot create links",
    "readlink": "links are never followed in the workspace",
    "realpath": "links are never followed; use abspath",
}


class ShimModule:
    """A read-only stand-in for a module: exactly the names it was given."""

    __slots__ = ("_label", "_names")

    def __init__(self, label: str, names: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_label", label)
        object.__setattr__(self, "_names", dict(names))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._names[name]
        except KeyError:
            pass
        why = _WHY.get(name)
        if why is None and name.startswith(("exec", "spawn", "posix_spawn")):
            why = "tools cannot run programs"
        why = why or "only workspace file operations are offered: " + ", ".join(sorted(self._names))
        raise AttributeError(f"{self._label}.{name} is not available to tools: {why}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{self._label} is read-only")

    def __repr__(self) -> str:
        return f"<module {self._label!r} (workspace shim)>"


class StatResult:
    """What a tool learns from stat(): size in bytes and modification time."""

    __slots__ = ("st_mtime", "st_size")
    st_size: int
    st_mtime: float

    def __init__(self, st: os.stat_result) -> None:
        object.__setattr__(self, "st_size", st.st_size)
        object.__setattr__(self, "st_mtime", st.st_mtime)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("stat results are read-only")

    def __repr__(self) -> str:
        return f"stat_result(st_size={self.st_size}, st_mtime={self.st_mtime})"


class WalkBudget:
    """Counts the entries one walk or glob visits; refuses past the bounds."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_WALK_ENTRIES

    def spend(self, count: int, depth: int, where: str) -> None:
        self.left -= count
        if self.left < 0:
            raise PathDenied(
                f"walking {where!r} visited more than {MAX_WALK_ENTRIES} entries; narrow it down"
            )
        if depth > MAX_WALK_DEPTH:
            raise PathDenied(f"{where!r} is more than {MAX_WALK_DEPTH} directories deep")


def text_path(path: Any) -> str:
    """A path argument as an exact str (str or a shim Path)."""
    value = os.fspath(path)
    if not isinstance(value, str):
        raise TypeError("a path must be a str or a Path")
    return str.__str__(value)


Bound = Callable[..., Any]
