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
- only the methods of classes made in roost's packages and installed
  libraries are kept (tests make a thousand classes `roost` never makes),
  and at most 8,000, so classes made while running (there are none in
  roost today) cannot grow the file without end;
- each method is marshalled on its own and decoded when a class first asks
  for it, so a command that makes few classes reads the file for little;
- the file is tied to the interpreter's magic number; a file that does not
  load, or belongs to another interpreter, is ignored (and rewritten).
The file has the trust of the `.pyc` files beside it: whoever can write
one can write the other. It is written atomically (temporary file, rename).

`install()` also defers the one other costly step of making a class: a
dataclass without a docstring gets `__doc__` = its name and signature, which
the stdlib works out with `inspect.signature` for every such class (about
200 of roost's, 30 ms of CPU a process on a slow machine), though nothing in
roost reads it. For the classes of roost's own packages the same text is
worked out when `__doc__` is first read (`_LazyDoc`), from the finished
class, as the stdlib does at the end of making it.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import gc
import importlib.util
import inspect
import marshal
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from types import CodeType
from typing import Any

_VERSIONS = ((3, 11),)
_MAGIC = importlib.util.MAGIC_NUMBER
_MAX = 8_000  # entries kept (roost makes about 1,300): classes made at run time cannot grow it


class _Cache:
    """Compiled method sources, by source text; saves itself at exit when it grew.

    The file holds each code object marshalled on its own, so a process reads
    the whole file as bytes and decodes only the methods of the classes it
    makes (a CLI command makes few of the daemon's)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.codes: dict[str, CodeType | bytes] = _load(path)
        self.added = 0

    def code(self, text: str, keep: Callable[[], bool] = lambda: True) -> CodeType:
        """The code of `text`, compiled at most once; a new one remembered only when
        `keep()` (asked on a miss only: a warm cache never asks)."""
        found = self.codes.get(text)
        if isinstance(found, bytes):
            found = decoded_code(found)
            if found is not None:
                self.codes[text] = found
        if found is None:
            found = compile(text, "<string>", "exec", dont_inherit=True)
            if len(self.codes) < _MAX and keep():
                self.codes[text] = found
                self.added += 1
        return found

    def save(self) -> None:
        if self.added:
            entries = {
                text: code if isinstance(code, bytes) else marshal.dumps(code)
                for text, code in self.codes.items()
            }
            write_marshal(self.path, _MAGIC, entries)


def decoded_code(data: bytes) -> CodeType | None:
    """A code object marshalled on its own, or None when the bytes are damaged."""
    try:
        code = marshal.loads(data)
    except Exception:  # damaged: EOFError, ValueError, TypeError, SystemError
        return None
    return code if isinstance(code, CodeType) else None


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
    except Exception:  # damaged: EOFError, ValueError, TypeError, SystemError
        return None
    finally:
        if enabled:
            gc.enable()


def write_marshal(path: Path, header: bytes, value: Any) -> None:
    """`header` + marshalled `value`, atomically (temporary file, rename); nothing when
    byte-code writing is off or the folder cannot be written. The file is as readable
    as the package folder above it, whatever the umask (roost's processes run under
    0077): it holds what shipped code compiles to, and a service that cannot write
    the tree reads what its installer wrote (bridge.cli.precompile)."""
    if sys.dont_write_bytecode:
        return
    with contextlib.suppress(OSError, ValueError):
        package = stat.S_IMODE(path.parent.parent.stat().st_mode)
        try:
            path.parent.mkdir()
        except FileExistsError:
            pass
        else:
            os.chmod(path.parent, package & 0o755)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_bytes(header + marshal.dumps(value))
            os.chmod(tmp, package & 0o644)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)


class KeptEntries:
    """A dict kept in a marshal file under `header` (another header: an empty dict), what
    this process found in it or added to it (`used`), and `save` at exit when it grew:
    merged with what other processes wrote meanwhile; past `bound` entries, only those
    this process used (entries of code edited away go). `bridge.regex_code` and
    `bridge.screening.shape_cache` keep theirs so; `stored` is what a value is written
    as (itself here; `bridge.regex_code` writes each marshalled on its own)."""

    def __init__(self, path: Path, header: bytes, bound: int) -> None:
        self.path, self.header, self.bound = path, header, bound
        loaded = read_marshal(path, header)
        self.entries: dict[Any, Any] = loaded if isinstance(loaded, dict) else {}
        self.added = 0
        self.used: set[Any] = set()

    def save(self) -> None:
        if not self.added:
            return
        now = read_marshal(self.path, self.header)
        merged = now if isinstance(now, dict) else {}
        merged.update(self.entries)
        if len(merged) > self.bound:
            merged = {key: self.entries[key] for key in self.used}
        write_marshal(self.path, self.header, {k: self.stored(v) for k, v in merged.items()})

    def stored(self, value: Any) -> Any:
        """`value` as the file holds it."""
        return value


def _load(path: Path) -> dict[str, CodeType | bytes]:
    loaded = read_marshal(path, _MAGIC)
    if not isinstance(loaded, dict):
        return {}
    return {
        k: v
        for k, v in loaded.items()
        if isinstance(k, str) and isinstance(v, CodeType | bytes)  # bytes: decoded on use
    }


def _shipped_roots() -> tuple[str, ...]:
    """Folders whose modules' classes are worth keeping: roost's packages (`bridge`
    and `forge`, beside this file's folder), the interpreter's and the installed
    libraries' folders. Tests, benches and scripts are outside them: the classes
    they make, kept, would grow the file that every `roost` command reads."""
    import sysconfig  # only here: a warm cache never needs it

    package = Path(__file__).parent
    roots = {str(package), str(package.parent / "forge")}
    paths = sysconfig.get_paths()
    roots.update(paths[name] for name in ("stdlib", "platstdlib", "purelib", "platlib"))
    return tuple(os.path.join(root, "") for root in roots)


def shipped_module(globals: dict[str, Any] | None, roots: tuple[str, ...]) -> bool:
    """Whether the module of `globals` (a class's module) has its file under `roots`."""
    file = (globals or {}).get("__file__")
    return isinstance(file, str) and file.startswith(roots)


def _method_maker(
    cache: _Cache, kept: Callable[[dict[str, Any] | None], bool] = lambda _globals: True
) -> Callable[..., Any]:
    """A stand-in for `dataclasses._create_fn` compiling through `cache`; the methods of
    classes whose module's globals `kept` refuses are compiled but not remembered."""
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
        keep = functools.partial(kept, globals)
        exec(cache.code(text, keep), globals, namespace)  # the stdlib text, compiled once
        return namespace["__create_fn__"](**locals)

    return create_fn


def cache_path(folder: Path | None, stem: str) -> Path:
    """`<stem>.<interpreter's cache tag>.marshal` in `folder`, by default `bridge/__pycache__`
    beside the byte code (shared with `bridge.regex_code`)."""
    where = folder if folder is not None else Path(__file__).parent / "__pycache__"
    return where / f"{stem}.{sys.implementation.cache_tag or 'python'}.marshal"


class _Pending(str):
    """The docstring a class holds while `dataclasses` makes it: not empty, so the
    stdlib does not work one out; replaced by a `_LazyDoc` when the class is made."""


_PENDING = _Pending("(its docstring is worked out when read)")


def generated_doc(cls: type) -> str:
    """The `__doc__` Python 3.11's `dataclasses` gives a class without a docstring."""
    try:
        text_sig = str(inspect.signature(cls)).replace(" -> None", "")
    except (TypeError, ValueError):
        text_sig = ""
    return cls.__name__ + text_sig


class _LazyDoc:
    """A made dataclass's `__doc__`: `generated_doc` of it, worked out on the first
    read (of the class or of an instance), then kept in its place as a plain str."""

    __slots__ = ()

    def __get__(self, instance: object, owner: type | None = None) -> str:
        owner = owner if owner is not None else type(instance)
        holder = next((k for k in owner.__mro__ if vars(k).get("__doc__") is self), owner)
        text = generated_doc(holder)
        type.__setattr__(holder, "__doc__", text)
        return text


_LAZY = _LazyDoc()


def _lazy_doc_maker(
    process_class: Callable[..., type], defer: Callable[[type], bool]
) -> Callable[..., type]:
    """A stand-in for `dataclasses._process_class` that leaves the generated
    `__doc__` of the classes `defer` names to be worked out when read."""

    def process(cls: type, *args: Any, **kwargs: Any) -> type:
        if cls.__doc__ or not defer(cls):
            return process_class(cls, *args, **kwargs)
        before = cls.__dict__.get("__doc__")
        cls.__doc__ = _PENDING
        try:
            made = process_class(cls, *args, **kwargs)
        except BaseException:
            cls.__doc__ = before
            raise
        for klass in {cls, made}:  # `slots=True` makes a new class from the old one's dict
            if vars(klass).get("__doc__") is _PENDING:
                type.__setattr__(klass, "__doc__", _LAZY)
        return made

    process.__wrapped__ = process_class  # type: ignore[attr-defined]
    return process


_ROOST_ROOTS = tuple(
    os.path.join(str(folder), "")
    for folder in (Path(__file__).parent, Path(__file__).parent.parent / "forge")
)


def roost_module(cls: type) -> bool:
    """Whether `cls` was made by a module of roost's packages (`bridge`, `forge`)."""
    module = sys.modules.get(cls.__module__)
    return shipped_module(vars(module) if module is not None else None, _ROOST_ROOTS)


def install(folder: Path | None = None) -> bool:
    """Wrap `dataclasses._create_fn` with the cache and `dataclasses._process_class`
    with the deferred docstring; False where it does not apply."""
    if sys.version_info[:2] not in _VERSIONS or not hasattr(dataclasses, "_create_fn"):
        return False
    if getattr(dataclasses._create_fn, "__roost_cached__", False):
        return True
    process_class = vars(dataclasses).get("_process_class")
    if process_class is not None:
        vars(dataclasses)["_process_class"] = _lazy_doc_maker(process_class, roost_module)
    cache = _Cache(cache_path(folder, "dataclass-code"))
    roots = functools.cache(_shipped_roots)  # on the first miss: sysconfig costs ~1 ms
    maker = _method_maker(cache, lambda globals: shipped_module(globals, roots()))
    maker.__roost_cached__ = True  # type: ignore[attr-defined]
    vars(dataclasses)["_create_fn"] = maker
    atexit.register(cache.save)
    return True
