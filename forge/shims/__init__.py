"""Path-gated stand-ins for the safe parts of `os`, `os.path` and `pathlib`.

`bind_shims` puts them behind the run's import hook, bound to that call's path
gate; they are built on the call's first import of one of them (most tools
import none, and making the `Path` class of a call is the dearest part of a
call's globals), so `import os`, `import os.path`,
`from os import path`, `import pathlib` and `from pathlib import Path` give a
tool these shims and never the real modules (the names are forge.modules'
ALLOWED entries for them; a test checks both lists agree).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from forge.pathgate import PathGate
from forge.shims.common import ShimModule
from forge.shims.osmod import make_os
from forge.shims.ospath import make_ospath
from forge.shims.paths import make_pathlib


def build_shims(gate: PathGate) -> dict[str, ShimModule]:
    """The three shim modules of one call, by import name."""
    ospath = make_ospath(gate)
    return {"os": make_os(gate, ospath), "os.path": ospath, "pathlib": make_pathlib(gate)}


SHIM_NAMES = frozenset({"os", "os.path", "pathlib"})


def shim_import(
    build: Callable[[], dict[str, ShimModule]], inner: Callable[..., Any]
) -> Callable[..., Any]:
    """An import hook answering the shim names (from `build()`, called once, on the
    first import of one of them) and passing the rest to `inner`."""
    shims: dict[str, ShimModule] = {}

    def guarded_import(
        name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> Any:
        if level == 0 and name in SHIM_NAMES:
            if not shims:
                shims.update(build())
            # `import os.path` binds the name `os`; `from os.path import x` wants os.path.
            return shims["os"] if name == "os.path" and not fromlist else shims[name]
        return inner(name, globals, locals, fromlist, level)

    return guarded_import


def bind_shims(glb: dict[str, Any], gate: PathGate) -> None:
    """Make the run's import hook (in `glb`'s builtins) answer os, os.path, pathlib."""
    safe = glb["__builtins__"]
    safe["__import__"] = shim_import(lambda: build_shims(gate), safe["__import__"])
