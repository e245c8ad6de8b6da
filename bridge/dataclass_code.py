"""A cache of the methods `dataclasses` generates, kept across processes like `.pyc` files.

On Python 3.11 every `@dataclass` compiles its `__init__`, `__repr__`,
`__eq__`, `__hash__` (and, when frozen, `__setattr__`/`__delattr__`) from
source text at class creation: about 1,300 compilations and a quarter of a
`roost` command's start-up (0.2 s of CPU, measured by `bench/startup.py`).
Python does not cache them as it caches modules' byte code, so every
daemon and every CLI command paid it again.

`install()` (run by `bridge/__init__.py`, before any roost dataclass is
made) wraps the stdlib's private `dataclasses._create_fn` so that the
source text it builds is compiled once and the code object is kept in
`__pycache__/dataclass-code.<cache tag>.marshal` beside this file. The
wrapper builds exactly the text the stdlib builds and looks it up by that
whole text, so a cached entry is only ever used for the identical source;
the resulting function is made by the same `exec` in the same namespaces.

It stays out of the way whenever it cannot be exact or safe:
- only on the Python versions whose `_create_fn` it mirrors (3.11: later
  versions build methods differently and are faster already);
- nothing is written when byte-code writing is off
  (`PYTHONDONTWRITEBYTECODE`, `sys.dont_write_bytecode`) or the folder is not
  writable (a read-only install under systemd): it then compiles as before;
- at most 8,000 methods are kept, so classes made while running (there
  are none in roost today) cannot grow the file without end;
- the file is tied to the interpreter's magic number; a file that does not
  load, or belongs to another interpreter, is ignored (and rewritten).
The file has the trust of the `.pyc` files beside it: whoever can write
one can write the other. It is written atomically (temporary file, rename).
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import gc
import importlib.util
import marshal
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import CodeType
from typing import Any

_VERSIONS = ((3, 11),)
_MAGIC = importlib.util.MAGIC_NUMBER
_MAX = 8_000  # entries kept (roost makes about 1,300): classes made at run time cannot grow it


class _Cache:
    """Compiled method sources, by source text; saves itself at exit when it grew."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.codes: dict[str, CodeType] = _load(path)
        self.added = 0

    def code(self, text: str) -> CodeType:
        found = self.codes.get(text)
        if found is None:
            found = compile(text, "<string>", "exec", dont_inherit=True)
            if len(self.codes) < _MAX:
                self.codes[text] = found
                self.added += 1
        return found

    def save(self) -> None:
        if self.added:
            write_marshal(self.path, _MAGIC, self.codes)


def read_marshal(path: Path, header: bytes) -> object:
    """What `write_marshal` wrote to `path` under `header`; None when it is absent,
    damaged or written under another header."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if not data.startswith(header):
        return None
    enabled = gc.isenabled()
    gc.disable()  # thousands of objects at once: no collection may traverse them half-made
    try:
        return marshal.loads(data[len(header) :])
    except (EOFError, ValueError, TypeError):
        return None
    finally:
        if enabled:
            gc.enable()


def write_marshal(path: Path, header: bytes, value: Any) -> None:
    """`header` + marshalled `value`, atomically (temporary file, rename); nothing when
    byte-code writing is off or the folder cannot be written."""
    if sys.dont_write_bytecode:
        return
    with contextlib.suppress(OSError, ValueError):
        path.parent.mkdir(exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_bytes(header + marshal.dumps(value))
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)


def _load(path: Path) -> dict[str, CodeType]:
    loaded = read_marshal(path, _MAGIC)
    if not isinstance(loaded, dict):
        return {}
    return {k: v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, CodeType)}


def _method_maker(cache: _Cache) -> Callable[..., Any]:
    missing = dataclasses.MISSING

    def create_fn(
        name: str,
        args: list[str],
        body: list[str],
        *,
        globals: dict[str, Any] | None = None,
        locals: dict[str, Any] | None = None,
        return_type: Any = missing,
    ) -> Any:
        # Same text as Python 3.11's dataclasses._create_fn builds (it may add
        # `_return_type` to the caller's locals, as the stdlib does).
        if locals is None:
            locals = {}
        annotation = ""
        if return_type is not missing:
            locals["_return_type"] = return_type
            annotation = "->_return_type"
        inner = " def {}({}){}:\n{}".format(
            name, ",".join(args), annotation, "\n".join(f"  {line}" for line in body)
        )
        text = f"def __create_fn__({', '.join(locals.keys())}):\n{inner}\n return {name}"
        namespace: dict[str, Any] = {}
        exec(cache.code(text), globals, namespace)  # the stdlib text, compiled once
        return namespace["__create_fn__"](**locals)

    return create_fn


def cache_path(folder: Path | None, stem: str) -> Path:
    """`<stem>.<interpreter's cache tag>.marshal` in `folder`, by default `bridge/__pycache__`
    beside the byte code (shared with `bridge.regex_code`)."""
    where = folder if folder is not None else Path(__file__).parent / "__pycache__"
    return where / f"{stem}.{sys.implementation.cache_tag or 'python'}.marshal"


def install(folder: Path | None = None) -> bool:
    """Wrap `dataclasses._create_fn` with the cache; False where it does not apply."""
    if sys.version_info[:2] not in _VERSIONS or not hasattr(dataclasses, "_create_fn"):
        return False
    if getattr(dataclasses._create_fn, "__roost_cached__", False):
        return True
    cache = _Cache(cache_path(folder, "dataclass-code"))
    maker = _method_maker(cache)
    maker.__roost_cached__ = True  # type: ignore[attr-defined]
    vars(dataclasses)["_create_fn"] = maker
    atexit.register(cache.save)
    return True
