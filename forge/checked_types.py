"""`dataclasses.dataclass` and `typing.TypedDict` as a tool gets them: field names checked.

`dataclass` writes the methods it adds (`__init__`, `__repr__`, `__eq__`, ...) as
source text made from the class's field names and runs it with `exec`. A class
statement can only name fields with identifiers, which RestrictedPython already
keeps from starting with `_`; but `TypedDict`'s functional form takes any string
as a key (`TypedDict("T", {'x"\\n raise ValueError(...)#': int})`), a class
inheriting from such a TypedDict carries those keys in its own annotations, and
`dataclass` then ran the text they made: unrestricted Python in the sandbox
child, with the real builtins (an attacker pass, issue 26's session 30). So a
tool's `TypedDict` refuses a key that is not a plain identifier (a `str`, not a
keyword, not starting with `_`), and its `dataclass` checks every name of the
class's own annotations, which is exactly what the real one reads, before the
real one sees the class. Refusals are `TypeError`s the tool may catch; nothing
of the class is generated.

The text is made from `Field.name`, not from the annotation key: the real
`dataclass` takes a field's `Field` from `getattr(cls, key)` (the class's own
attribute or an inherited one), sets its `name` to the key and pastes `name`
into the text; a base dataclass's fields come from the base's
`__dataclass_fields__`, pasted by their `name` too. A `Field` subclass whose
`name` is a property answering any text made the same escape (a later attacker
pass: `class F(Field): name = property(lambda s: 'x"\\n ...#', ...)`
as a default, or as an attribute of a base class). `Field` is no longer offered
and forge.policy.guards `make_class` refuses it as a base; behind that, the
checked `dataclass` refuses, before the real one runs, any value of a field's
name (on the class, on every class of its MRO and on the metaclass) that is a
`Field` but not exactly one, and any base whose `__dataclass_fields__` is not a
plain dict of exact `Field`s each named by its (checked) key; annotations must be
a plain dict (a metaclass had made them a dict subclass with its own `items()`).

The attacker pass atk6: the checked `dataclass` takes only a class the tool's own
class statements made (forge.tool_classes; it had written `__eq__` and
`__setattr__` into `UserDict` and `Counter`); a field whose name only the
METACLASS answers is refused (the real one's `getattr(cls, name)` had made the
bound `ABCMeta.register` a default); and a class without a docstring gets one from
its field names before the real one runs, which would otherwise format
`inspect.signature(cls)`, calling `repr()` of the tool's annotation values.

`asdict`, `astuple` and `replace` are checked too: the real `asdict`/`astuple`
deep-copy every leaf, and `copy.deepcopy` takes `__reduce_ex__` and friends from
the object, which two later passes had put into an instance's dict (through a
`cached_property` whose `attrname` a tool set) and turned into a `setattr` of any
name. A tool's `asdict`/`astuple` are forge's own and copy nothing (`_convert`);
all three refuse an instance holding an attribute no tool could have written, a
forged `__dataclass_fields__` and an instance claiming another class.

Two calls whose RESULT or ARGUMENTS the attribute verdict never sees (an attacker
pass, atk2 F1 and F3): the real `typing.overload` returns `typing._overload_dummy`,
a library function (an unbound library function runs its code with any object the
tool passes); a tool's `overload` takes only a function the tool wrote (or a
`staticmethod`/`classmethod` of one) and returns it unchanged. The real
`hashlib.file_digest` calls a digest that is not a name and hands it a
`memoryview` of its buffer (a builtin the linter bans), and hands a file-like
object its `bytearray`: a tool's `file_digest` takes only a digest name (an exact
`str`) and a file `open(path, 'rb')` gave the tool. `string.Template` and
`re.escape`: forge.checked_text.
"""

from __future__ import annotations

import abc
import collections
import dataclasses
import functools
import hashlib
import io
import keyword
import sys
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any

from forge.annotation_values import snapshot
from forge.refused import why_refused
from forge.tool_classes import made_by_tool, record
from forge.write_budget import BudgetedRaw


def check_names(names: Iterable[object], what: str) -> None:
    """TypeError unless every name is a plain identifier a tool could have written."""
    for name in names:
        if (
            type(name) is not str  # a str subclass could answer the checks below as it likes
            or not str.isidentifier(name)
            or keyword.iskeyword(name)
            or str.startswith(name, "_")
        ):
            shown = repr(name) if type(name) is str else f"a {type(name).__name__}"
            raise TypeError(
                f"{what}: field names must be identifiers not starting with '_' (got {shown[:60]})"
            )


def _annotations(cls: object) -> dict[Any, Any]:
    """The class's own annotations, as `dataclasses` reads them: a plain dict or none
    (the real one iterates `.items()`, which a dict subclass answers as it likes: the
    attacker pass after session 30 pasted its own text through it). TypeError for
    anything else."""
    own = type.__dict__["__dict__"].__get__(cls) if isinstance(cls, type) else {}
    found = own.get("__annotations__", {})
    if type(found) is not dict:
        raise TypeError(f"dataclass: annotations must be a plain dict, not {type(found).__name__}")
    return found


def _is_field(value: object) -> bool:
    """Whether the real `dataclass` could take `value` for a `Field` (it asks
    `isinstance`, which also believes a `__class__` that claims one)."""
    return isinstance(value, dataclasses.Field) or issubclass(type(value), dataclasses.Field)


def _exact_field(value: object, what: str) -> None:
    """TypeError unless `value`, if the real `dataclass` would take it for a
    `Field`, is exactly one (a subclass decides what its `name` answers)."""
    if _is_field(value) and type(value) is not dataclasses.Field:
        raise TypeError(f"dataclass: {what} is a {type(value).__name__}, not a dataclasses.Field")


# the metaclasses a class a tool decorates may have: its own classes' (type), and
# those of the library classes it may inherit from (collections.abc, Protocol)
_METACLASSES = frozenset({type, abc.ABCMeta, type(typing.Protocol)})


def _check_fields(target: type) -> None:
    """Everything the real `dataclass` will paste into the text it execs, checked
    before it runs: the class's metaclass, the names of its own annotations, the
    default each name has in the class dicts of its MRO (read once, never through
    `getattr`), any `Field` anywhere on the class or its metaclass, and the fields
    of every base it will read through `__dataclass_fields__`
    (`dataclasses._process_class`)."""
    if not isinstance(target, type):
        raise TypeError("dataclass: expects a class")
    if type(target) not in _METACLASSES:  # a metaclass's `__dict__` could answer anything
        raise TypeError(f"dataclass: a class of metaclass {type(target).__name__}")
    # a fresh copy no tool holds, whose values run no code of theirs when looked up:
    # what the names check below and the real `dataclass` then read (`isinstance` asks
    # a value's `__class__`: a property there swapped a key in the middle of the real
    # `dataclass`'s loop, the attacker pass of session 32; forge.annotation_values)
    names = snapshot(target, _annotations(target), "dataclass")
    check_names(names, "dataclass")
    mro = type.__dict__["__mro__"].__get__(target)  # never a metaclass's own answer
    meta_mro = type.__dict__["__mro__"].__get__(type(target))
    for klass in (*mro, *meta_mro):
        for key, value in dict(type.__dict__["__dict__"].__get__(klass)).items():
            _exact_field(value, f"attribute {key!r} of {klass.__name__}")
    # each field's default as the class holds it, read once and never through `getattr`:
    # a descriptor there (a `classmethod(property(...))`) answered one thing to this
    # check and another to the real `dataclass`'s own `getattr` (the attacker pass
    # after the `register` one); only plain values, `Field`s and functions pass
    dicts = [type.__dict__["__dict__"].__get__(klass) for klass in mro]
    meta_dicts = [type.__dict__["__dict__"].__get__(klass) for klass in meta_mro]
    for name in names:
        _not_from_metaclass(name, dicts, meta_dicts, type(target))
        raw = next((found[name] for found in dicts if name in found), None)
        kind = type(raw)
        if kind is types.FunctionType and not tool_function(raw):
            raise TypeError(f"dataclass: the default of field {name!r} is a library function")
        if raw is not None and kind is not types.FunctionType and hasattr(kind, "__get__"):
            raise TypeError(
                f"dataclass: the default of field {name!r} is a descriptor ({kind.__name__})"
            )
        _exact_field(raw, f"the default of field {name!r}")
    for base in mro[1:]:
        _check_dataclass_fields(base, f"dataclass: base {base.__name__}")


def _not_from_metaclass(name: str, dicts: list[Any], meta_dicts: list[Any], meta: type) -> None:
    """TypeError if the real `dataclass`'s `getattr(cls, name)` would answer with the
    METACLASS's attribute: a name the class dicts lack but the metaclass has (a field
    `register` on a `UserDict` subclass got the bound `ABCMeta.register` as its
    default, and `astuple` handed it to the tool: the attacker pass atk6 F1), or one
    the metaclass holds as a data descriptor (it wins over the class's own value)."""
    for found in meta_dicts:
        if name not in found:
            continue
        value = found[name]
        kind = type(value)
        if not any(name in own for own in dicts) or hasattr(kind, "__set__"):
            raise TypeError(
                f"dataclass: field {name!r} has no default of its own and its class's "
                f"metaclass {meta.__name__} answers that name; give it a default or "
                "another name"
            )
        return


def _check_dataclass_fields(cls: type, what: str) -> None:
    """TypeError unless `cls`'s `__dataclass_fields__`, if any, is a plain dict of
    exact `Field`s each named by its (checked) key."""
    found = getattr(cls, "__dataclass_fields__", None)
    if found is None:
        return
    if type(found) is not dict:
        raise TypeError(f"{what} has forged dataclass fields")
    for key, value in dict(found).items():
        check_names([key], "dataclass")
        if type(value) is not dataclasses.Field or type(value.name) is not str:
            raise TypeError(f"{what} has forged dataclass fields")
        if value.name != key:
            raise TypeError(f"{what}'s field {key!r} is named otherwise")


def _instance_dict(value: object) -> dict[Any, Any] | None:
    """`value`'s own attribute dict as the type's descriptor gives it (no tool code
    runs: a tool class defines no `__getattribute__`), or None without one."""
    try:
        found = object.__getattribute__(value, "__dict__")
    except AttributeError:
        return None
    return found if type(found) is dict else None


def _dataclass_instance(obj: object, what: str) -> None:
    """TypeError unless `obj` is a plain dataclass instance: not a class, its
    class's fields plain, no other class claimed, and no attribute of its own that
    no tool could have written (`__dataclass_fields__` or `__reduce_ex__` in its
    dict: `replace` and the copy machinery read those from the instance)."""
    if isinstance(obj, type):
        raise TypeError(f"{what}() should be called on dataclass instances")
    cls = type(obj)
    if getattr(cls, "__dataclass_fields__", None) is None:
        raise TypeError(f"{what}() should be called on dataclass instances")
    _check_dataclass_fields(cls, f"{what}: {cls.__name__}")
    if object.__getattribute__(obj, "__class__") is not cls:
        raise TypeError(f"{what}: the instance claims another class")
    for key in _instance_dict(obj) or {}:
        if type(key) is not str or key.startswith("_"):
            raise TypeError(f"{what}: an object holds an attribute no tool could set")


def tool_function(value: object) -> bool:
    """A plain function the tool itself wrote (its code compiled as `<tool>`)."""
    code = getattr(value, "__code__", None) if type(value) is types.FunctionType else None
    return code is not None and code.co_filename == "<tool>"


def _held(value: Any, what: str) -> Any:
    """`value`, read from a field by library code, if a tool may hold it: never a
    library function (an unbound method runs with any object as `self`:
    `UserList.copy(int)` is the real `type`), nor a class a tool may not hold
    (`type`, a metaclass, `object`, a function's or module's class), nor anything
    else forge.refused names or judges by forge.policy.verdict's rules (`why_refused`:
    a bound `ABCMeta.register` too, atk6 F1). The attacker pass after the unbound
    one took `UserList.copy` out of a field default through `asdict`, and the real
    `type` out of a class-level descriptor through `replace`."""
    if type(value) is types.FunctionType and not tool_function(value):
        raise TypeError(f"{what}: a field holds a library function")
    if isinstance(value, property) and not all(
        f is None or tool_function(f) for f in (value.fget, value.fset, value.fdel)
    ):
        raise TypeError(f"{what}: a field holds a library property")
    why = why_refused(value)
    if why is not None:
        raise TypeError(f"{what}: a field holds {why}, which is not accessible to tools")
    return value


MAX_DEPTH = 200  # nesting `asdict`/`astuple` follow (the real ones: the recursion limit)


def _convert(value: Any, as_dict: bool, factory: Callable[..., Any], depth: int) -> Any:
    """`value` as the real `asdict`/`astuple` make it, without `copy.deepcopy`:
    dataclass instances (checked), lists, tuples, named tuples and dicts are rebuilt
    with their items converted; a set is copied; anything else is returned as it
    is (the real ones deep-copy it, and `deepcopy` takes `__reduce_ex__`,
    `__deepcopy__` and `__setstate__` from objects a tool made: the attacker passes
    after session 30 turned that into a `setattr` of any name, twice)."""
    if depth > MAX_DEPTH:
        raise TypeError(f"{'asdict' if as_dict else 'astuple'}: nested more than {MAX_DEPTH} deep")
    down = depth + 1
    cls = type(value)
    what = "asdict" if as_dict else "astuple"
    if not isinstance(value, type) and getattr(cls, "__dataclass_fields__", None) is not None:
        _dataclass_instance(value, what)
        pairs = [
            (f.name, _convert(_held(getattr(value, f.name), what), as_dict, factory, down))
            for f in dataclasses.fields(value)
        ]
        return factory(pairs) if as_dict else factory([v for _, v in pairs])
    if cls is list or cls is tuple:
        return cls(_convert(v, as_dict, factory, down) for v in value)
    if isinstance(value, tuple) and type(getattr(cls, "_fields", None)) is tuple:
        return cls(*[_convert(v, as_dict, factory, down) for v in value])  # a named tuple
    if isinstance(value, list):
        return [_convert(v, as_dict, factory, down) for v in value]
    if isinstance(value, dict):
        pairs = [
            (_convert(k, as_dict, factory, down), _convert(v, as_dict, factory, down))
            for k, v in dict.items(value)
        ]
        if cls is collections.defaultdict:
            made = typing.cast("collections.defaultdict[Any, Any]", value)
            return collections.defaultdict(made.default_factory, pairs)
        if cls in (collections.OrderedDict, collections.Counter):
            return cls(pairs)
        return dict(pairs)
    if cls is set or cls is frozenset:
        return cls(value)
    return value


def asdict(obj: Any, *, dict_factory: Callable[..., Any] = dict) -> Any:
    """`dataclasses.asdict` for a tool: forge's own, no `deepcopy` (`_convert`)."""
    _dataclass_instance(obj, "asdict")
    return _convert(obj, True, dict_factory, 0)


def astuple(obj: Any, *, tuple_factory: Callable[..., Any] = tuple) -> Any:
    """`dataclasses.astuple` for a tool: forge's own, no `deepcopy` (`_convert`)."""
    _dataclass_instance(obj, "astuple")
    return _convert(obj, False, tuple_factory, 0)


def replace(obj: Any, /, **changes: Any) -> Any:
    """`dataclasses.replace` after `_dataclass_instance` (on `obj`; the changes are
    keyword arguments, so their names are the tool's own identifiers)."""
    _dataclass_instance(obj, "replace")
    filled = dict(changes)
    # what the real one would read itself, read and judged here: every init field, and
    # an `InitVar` with a default (`fields()` leaves InitVars out; the real `replace`
    # reads them with `getattr` too: the attacker pass of session 32)
    for f in dict(type(obj).__dataclass_fields__).values():  # checked: plain
        kind = f._field_type
        if kind is dataclasses._FIELD_CLASSVAR:  # type: ignore[attr-defined]
            continue  # never read by the real one
        if kind is dataclasses._FIELD_INITVAR and f.default is dataclasses.MISSING:  # type: ignore[attr-defined]
            continue  # the real one refuses it unless given: nothing read
        if f.init and f.name not in filled:
            filled[f.name] = _held(getattr(obj, f.name), "replace")
    return dataclasses.replace(obj, **filled)


def _signature_doc(target: type, names: Iterable[str]) -> str:
    """The docstring the real `dataclass` gives a class without one, as far as it can
    be made without running tool code: `Name(a, b)`, the `__init__` parameters by
    name (the real one formats `inspect.signature(cls)`, which calls `repr()` of every
    annotation and default: a `Counter` subclass's `most_common` ran there, inside the
    real `dataclass`; the attacker pass atk6 F2)."""
    params: dict[str, bool] = {}
    mro = type.__dict__["__mro__"].__get__(target)
    for base in mro[-1:0:-1]:  # checked plain by `_check_dataclass_fields`
        for f in dict(getattr(base, "__dataclass_fields__", None) or {}).values():
            params[f.name] = f.init and f._field_type is not dataclasses._FIELD_CLASSVAR  # type: ignore[attr-defined]
    own = type.__dict__["__dict__"].__get__(target)
    for name in names:
        value = own.get("__annotations__", {}).get(name)
        classvar = value is typing.ClassVar or (
            type(value) is typing._GenericAlias  # type: ignore[attr-defined]
            and value.__origin__ is typing.ClassVar
        )
        default = own.get(name)
        params[name] = not classvar and (type(default) is not dataclasses.Field or default.init)
    shown = ", ".join(name for name, init in params.items() if init)
    return f"{type.__dict__['__name__'].__get__(target)}({shown})"


def dataclass(cls: type | None = None, /, **options: Any) -> Any:
    """`dataclasses.dataclass`, with or without options, after `_check_fields`; a class
    without a docstring gets one made here (`_signature_doc`), so the real one never
    formats `inspect.signature`."""

    def wrap(target: type) -> type:
        _check_fields(target)
        if not type.__dict__["__doc__"].__get__(target):
            names = list(_annotations(target))  # the snapshot `_check_fields` made and checked
            type.__setattr__(target, "__doc__", _signature_doc(target, names))
        made: type = dataclasses.dataclass(**options)(target)
        return made

    if cls is None:
        return wrap
    return wrap(cls)


def _tool_class(target: object) -> None:
    """TypeError unless `target` is a class the tool's own class statements made
    (forge.tool_classes): `dataclass(UserDict)` had made every two `UserDict`s equal,
    `dataclass(frozen=True)(Counter)` every `Counter` frozen (the attacker pass atk6 F3);
    library and forge classes are read-only to tools."""
    if not isinstance(target, type):
        raise TypeError("dataclass: expects a class")
    if not made_by_tool(target):
        shown = f"{type.__dict__['__module__'].__get__(target)}.{target.__qualname__}"
        raise TypeError(
            f"dataclass: only a class the tool defines can be made a dataclass, not {shown}"
        )


def tool_dataclass(cls: type | None = None, /, **options: Any) -> Any:
    """`dataclass` as a tool gets it: only of a class the tool defined (`_tool_class`),
    checked before anything is written into it; a class it returns in place of the
    target (`slots=True` builds one from it) is the tool's too."""

    def wrap(target: type) -> type:
        _tool_class(target)
        made: type = dataclass(**options)(target)
        if made is not target:
            record(made)
        return made

    if cls is None:
        return wrap
    return wrap(cls)


def TypedDict(  # the name a tool imports
    typename: str, fields: dict[Any, Any] | None = None, /, *, total: bool = True, **kwargs: Any
) -> Any:
    """`typing.TypedDict`'s functional form, after `check_names` on every key."""
    # a plain copy, checked and then handed on: a dict subclass could iterate one way for
    # the check and give other keys to `dict(fields)` inside typing (its `keys()`)
    plain = dict(fields) if fields is not None else None
    check_names([*(plain or {}), *kwargs], "TypedDict")
    made = typing.TypedDict(typename, plain, total=total, **kwargs)  # type: ignore[misc]
    made.__module__ = sys._getframe(1).f_globals.get("__name__", "__main__")
    return made


# `class Movie(TypedDict): ...` keeps working: the class statement asks for the bases
# the real one gives (its keys are identifiers by the statement's own syntax)
TypedDict.__mro_entries__ = typing.TypedDict.__mro_entries__  # type: ignore[attr-defined]


def _cached_own(function: Any, what: str) -> None:
    """TypeError unless `function` is the tool's own: `cache` and `lru_cache` copy what
    they wrap's `__dict__` onto the wrapper (`update_wrapper`), where it is read with
    no descriptor binding: `cache(ChainMap).fromkeys` was a raw classmethod object,
    `cache(RegexFlag).ASCII` a raw `enum.property` (an attacker pass: no escape found
    through them, but no tool needs to cache a library class)."""
    if not tool_function(function):
        raise TypeError(f"{what}: only a function the tool wrote can be cached")


def cache(user_function: Any, /) -> Any:
    """`functools.cache` of a tool's own function."""
    _cached_own(user_function, "cache")
    return functools.cache(user_function)


def lru_cache(maxsize: Any = 128, typed: bool = False) -> Any:
    """`functools.lru_cache`, as a decorator with or without arguments, of a tool's own
    function."""
    if callable(maxsize) and not isinstance(maxsize, bool):
        _cached_own(maxsize, "lru_cache")
        return functools.lru_cache(maxsize=128, typed=typed)(maxsize)

    def wrap(user_function: Any) -> Any:
        _cached_own(user_function, "lru_cache")
        return functools.lru_cache(maxsize=maxsize, typed=typed)(user_function)

    return wrap


def overload(func: Any, /) -> Any:
    """`typing.overload` of a tool's own function (or a `staticmethod`/`classmethod` of
    one): returned as it is, never `typing._overload_dummy`."""
    inner = func.__func__ if type(func) in (staticmethod, classmethod) else func
    if not tool_function(inner):
        raise TypeError("overload: only a function the tool wrote can be an overload")
    return func


def final(f: Any, /) -> Any:
    """`typing.final`, returning `f` as it is: the real one writes `__final__ = True`
    on whatever it is given (a library class, a module proxy: a write the write guard
    refuses; the attacker pass of session 32). The flag is only for type checkers."""
    return f


# what the tool's `open(path, 'rb')` (and 'rb+', 'r+b' ...) gives (forge.pathgate,
# forge.write_budget): the real buffered files over a real file descriptor, whose
# `readinto` is C code that calls no method of the tool's
_BINARY_FILES = (io.BufferedReader, io.BufferedRandom)
_RAW_FILES = (io.FileIO, BudgetedRaw)


def file_digest(fileobj: Any, digest: Any, /) -> Any:
    """`hashlib.file_digest` of a file the tool opened in binary mode, by digest name."""
    if type(digest) is not str:
        raise TypeError(
            "file_digest: give the digest by name, e.g. file_digest(f, 'sha256'), "
            f"not a {type(digest).__name__}"
        )
    if type(fileobj) not in _BINARY_FILES or type(fileobj.raw) not in _RAW_FILES:
        raise TypeError(
            f"file_digest: expects a file from open(path, 'rb'), not a {type(fileobj).__name__}"
        )
    return hashlib.file_digest(fileobj, digest)


CHECKED: dict[tuple[str, str], Callable[..., Any]] = {
    ("functools", "cache"): cache,
    ("functools", "lru_cache"): lru_cache,
    ("dataclasses", "dataclass"): tool_dataclass,
    ("dataclasses", "asdict"): asdict,
    ("dataclasses", "astuple"): astuple,
    ("dataclasses", "replace"): replace,
    ("typing", "TypedDict"): TypedDict,
    ("typing", "overload"): overload,
    ("typing", "final"): final,
    ("hashlib", "file_digest"): file_digest,
}
