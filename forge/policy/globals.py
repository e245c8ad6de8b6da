"""Layer 2, the run's namespace: a fresh globals dict with a fresh, minimal builtins
dict per run (never RestrictedPython's shared `safe_builtins`), the import hook
over read-only module proxies (forge.modules), the print sink, and the call's
path-gated `open`/`listdir` and the handles of its declared secrets.
"""

from __future__ import annotations

import builtins
import importlib
import operator
from collections.abc import Callable, Iterable, Mapping
from types import SimpleNamespace
from typing import Any

from forge.net_client import Secret, handle
from forge.policy.builtin_names import SAFE_BUILTINS
from forge.policy.guards import (
    Guards,
    JudgedModules,
    _apply,
    _inplacevar,
    _iter_unpack_sequence,
    _unpack_sequence,
)
from forge.schema import secret_key


class OutputTooLarge(Exception):
    """The tool printed more than the cap allows."""


class PrintSink:
    """Collects everything a tool prints, up to `cap` characters."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[str] = []
        self.size = 0

    def text(self) -> str:
        return "".join(self.parts)

    def collector(self, getattr_: Any = None) -> _PrintCollector:
        return _PrintCollector(self, getattr_)


class _PrintCollector:
    def __init__(self, sink: PrintSink, getattr_: Any) -> None:
        self.sink = sink
        self.getattr = getattr_
        self.txt: list[str] = []

    def write(self, text: str) -> None:
        self.sink.size += len(text)
        if self.sink.size > self.sink.cap:
            raise OutputTooLarge(f"the tool printed more than {self.sink.cap} characters")
        self.txt.append(text)
        self.sink.parts.append(text)

    def __call__(self) -> str:
        return "".join(self.txt)

    def _call_print(self, *objects: Any, **kwargs: Any) -> None:
        if kwargs.get("file") is None:
            kwargs["file"] = self
        elif self.getattr is not None:
            self.getattr(kwargs["file"], "write")
        print(*objects, **kwargs)


# Modules that allowed C functions import lazily through the frame's __import__
# (datetime.strptime -> _strptime, datetime.strftime -> time). CPython's
# PyImport_Import passes an empty *list* as fromlist; compiled import
# statements pass None or a tuple, so tool code can never take this path.
INTERNAL_IMPORTS = frozenset({"_strptime", "time"})


def make_import(proxies: Mapping[str, SimpleNamespace]) -> Callable[..., Any]:
    def guarded_import(
        name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> Any:
        if level == 0 and name in INTERNAL_IMPORTS and type(fromlist) is list and not fromlist:
            return importlib.import_module(name)
        if level != 0 or name not in proxies:
            raise ImportError(f"import of {name!r} is not allowed")
        return proxies[name]

    return guarded_import


def make_secret_getter(names: Iterable[str]) -> Callable[[str], Secret]:
    """`secret(name)`: an opaque handle (forge.net_client.Secret), never the value;
    the child never receives vault values, only the names the runner holds values
    for. Names are case-insensitive everywhere (one rule: schema.secret_key)."""
    known = {secret_key(k): k for k in names}

    def secret(name: str) -> Secret:
        key = secret_key(name) if isinstance(name, str) else None
        if key is None or key not in known:
            raise KeyError(
                f"secret {name!r} is not available: declare it in SECRETS and store it in the vault"
            )
        return handle(known[key])

    return secret


def safe_builtins() -> dict[str, Any]:
    """The template of plain builtins a tool gets; copied, never shared, per run."""
    return {name: getattr(builtins, name) for name in SAFE_BUILTINS}


def make_globals(
    template: Mapping[str, Any],
    proxies: Mapping[str, SimpleNamespace],
    open_fn: Callable[..., Any],
    listdir_fn: Callable[..., Any],
    secrets: Iterable[str],
    sink: PrintSink,
) -> dict[str, Any]:
    """A fresh globals dict (with fresh builtins) for one restricted run."""
    glb = prepare_globals(template, proxies, sink)
    bind_call(glb, open_fn, listdir_fn, secrets)
    return glb


def prepare_globals(
    template: Mapping[str, Any],
    proxies: Mapping[str, SimpleNamespace],
    sink: PrintSink,
    *,
    owned: bool = False,
    modules: JudgedModules | None = None,
) -> dict[str, Any]:
    """The part of a run's fresh globals that does not depend on the call: new
    guards, a new builtins dict, the import hook. A sandbox child builds it while
    it waits for its one call; `bind_call` then adds what the call decides.
    `owned`: `template` is a dict that belongs to this one run and is never used
    again (a sandbox child's own copy-on-write copy of the helper's template: the
    child runs one call and exits), so it becomes the run's builtins dict itself
    instead of a copy (copying it touches every builtin, a page copied each in a
    fresh child). `modules`: the module proxies' attributes as the helper judged
    them once (forge.policy.guards `judge_modules`), for the guards' fast path."""
    guards = Guards(modules)
    safe = template if owned and isinstance(template, dict) else dict(template)
    safe["__import__"] = make_import(proxies)
    safe["__build_class__"] = builtins.__build_class__
    return {
        "__builtins__": safe,
        "__name__": "tool",
        "__metaclass__": guards.make_class,
        "_getattr_": guards.getattr,
        "_getitem_": operator.getitem,
        "_getiter_": iter,
        "_write_": guards.write,
        "_inplacevar_": _inplacevar,
        "_aug_item_": guards.aug_item,
        "_aug_attr_": guards.aug_attr,
        "_apply_": _apply,
        "_print_": sink.collector,
        "_unpack_sequence_": _unpack_sequence,
        "_iter_unpack_sequence_": _iter_unpack_sequence,
    }


def bind_call(
    glb: dict[str, Any],
    open_fn: Callable[..., Any],
    listdir_fn: Callable[..., Any],
    secrets: Iterable[str],
) -> None:
    """Add the call's path gate and secret handles (by name) to globals from
    `prepare_globals`."""
    safe = glb["__builtins__"]
    safe["open"] = open_fn
    safe["listdir"] = listdir_fn
    safe["secret"] = make_secret_getter(secrets)


def make_unrestricted_globals() -> dict[str, Any]:
    """Full Python builtins: only for tests that show the process layers alone."""
    return {"__builtins__": dict(vars(builtins)), "__name__": "tool"}
