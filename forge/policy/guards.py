"""Layer 2, run time: the guards the restricted code calls for every attribute,
item, write and in-place operation, and the `str.format` that resolves its fields
through them. A fresh `Guards` per run (forge.policy.globals builds it). What an
attribute lookup returns is judged by forge.policy.verdict (issue 21).
"""

from __future__ import annotations

import _string  # type: ignore[import-not-found]
import builtins
import dataclasses
import functools
import operator
import string
import types
import typing
from collections import ChainMap, UserDict, UserList, UserString, deque
from collections.abc import Callable, Mapping
from decimal import Context as DecimalContext
from typing import Any

from RestrictedPython import Guards as _rp_guards
from RestrictedPython.transformer import INSPECT_ATTRIBUTES

from forge.lint import INSPECT_ATTRS
from forge.policy.verdict import Verdicts
from forge.shims.common import ShimModule
from forge.tool_classes import record

BLOCKED_ATTRS = frozenset(INSPECT_ATTRIBUTES) | INSPECT_ATTRS
# RestrictedPython ships no annotations: its two unpack guards, typed here.
_guarded_unpack: Callable[..., Any] = _rp_guards.guarded_unpack_sequence
_guarded_iter_unpack: Callable[..., Any] = _rp_guards.guarded_iter_unpack_sequence
WRITABLE_TYPES = (dict, list, set, bytearray, deque, ChainMap, UserDict, UserList, DecimalContext)
_INPLACE: Mapping[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
    "&=": operator.iand,
    "|=": operator.ior,
    "^=": operator.ixor,
    "@=": operator.imatmul,
}
_MISSING = object()
# Names the guards treat specially (refused, or routed through the safe formatter).
_FORMAT_ATTRS = frozenset({"format", "format_map"})
_SPECIAL_ATTRS = BLOCKED_ATTRS | _FORMAT_ATTRS | {"obj"}
# Exact built-in types that are not a type, an exception or a string.Formatter:
# for them the full check below comes down to "a public name, not one of
# _SPECIAL_ATTRS", so `getattr` answers from a precomputed set of those names.
_PLAIN_ATTRS: Mapping[type, frozenset[str]] = {
    cls: frozenset(n for n in dir(cls) if not n.startswith("_") and n not in _SPECIAL_ATTRS)
    for cls in (dict, list, tuple, set, frozenset, str, bytes, bytearray, int, float, complex, bool)
}
_builtin_getattr = builtins.getattr
# Exact types `write` allows (all in WRITABLE_TYPES, none a type): the fast path.
_WRITABLE_EXACT = frozenset({dict, list, set, bytearray, deque})
_WRITABLE_SET = frozenset(WRITABLE_TYPES)
# Library classes a tool class may not inherit from (`make_class`): library code
# trusts what their instances answer. `dataclasses.dataclass` pastes `Field.name`
# into the text of the methods it execs with the real builtins; a subclass made
# `name` a property answering any text (found by an attacker pass).
# `InitVar` is a marker `dataclass` recognises by its exact type, never meant to
# be extended either (`KW_ONLY` is an instance, not a class). `type`: a tool class
# based on it is a metaclass, and calling one makes classes from any namespace,
# past `make_class`, the linter and RestrictedPython's name rules (dunders such
# as `__annotations__`, `__dataclass_fields__`, `__class__`, `__mro__`): the next
# attacker pass reached the real builtins so through `dataclass` and `replace`.
# `typing.Type` as a base resolves to `type` (its `__mro_entries__`).
# `functools.cached_property` stores its value under `attrname` in the instance's
# dict: a subclass let a tool set `attrname` to any text (`__reduce_ex__`), then a
# `deepcopy` (in `asdict`) took it from the instance: a setattr of any name.
# `typing.NewType`: its `__init__` sets `__qualname__`, `__name__` (from the
# name's own `rpartition`, which a tool `UserString` answers as it likes) and
# `__supertype__` on the instance: a subclass let a tool plant dunder keys in an
# instance dict it owns (attacker pass atk2 F2); no tool needs to extend it.
NOT_SUBCLASSABLE: frozenset[type] = frozenset(
    {dataclasses.Field, dataclasses.InitVar, type, functools.cached_property, typing.NewType}
)


class _DeniedWrite:
    """What `_write_` returns for objects a tool may not modify."""

    __slots__ = ("_name",)
    _name: str

    def __init__(self, ob: Any) -> None:
        object.__setattr__(self, "_name", type(ob).__name__)

    def _deny(self, *args: Any) -> None:
        raise TypeError(f"tools may not modify {self._name} objects")

    __setattr__ = __delattr__ = __setitem__ = __delitem__ = _deny


class _SafeFormatter(string.Formatter):
    """str.format whose fields go through the guards (CVE-2023-41039)."""

    def __init__(self, getattr_: Callable[..., Any], getitem_: Callable[..., Any]) -> None:
        self._getattr = getattr_
        self._getitem = getitem_

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> tuple[Any, Any]:
        first, rest = _string.formatter_field_name_split(field_name)
        obj = self.get_value(first, args, kwargs)
        for is_attr, key in rest:
            obj = self._getattr(obj, key) if is_attr else self._getitem(obj, key)
        return obj, first


# A run's module proxies, by id: (the proxy, the names of its attributes whose
# values the full check lets through). Made once per helper (`judge_modules`).
JudgedModules = Mapping[int, tuple[Any, frozenset[str]]]


def judge_modules(modules: Mapping[str, Any]) -> JudgedModules:
    """Judge every attribute of the module proxies `modules` (forge.modules
    `build_proxies`: namespaces a tool cannot write to, since `_write_` refuses them,
    holding fixed library objects) by the full check, once: a helper does it before
    its zygote forks, and every run's guards then let a tool's `csv.reader` or
    `math.sqrt` through on a fast path with the same answer
    (`tests/forge/test_prepared.py`). Never a call's own `net` proxy (forge.child
    makes it on the call's first import): it is judged on each lookup."""
    guards = Guards()
    judged = {}
    for proxy in modules.values():
        passed = set()
        for name in vars(proxy):
            try:
                guards.getattr(proxy, name)
            except AttributeError:
                continue
            passed.add(name)
        judged[id(proxy)] = (proxy, frozenset(passed))
    return judged


class Guards:
    """The run-time guards of one run; `tool_classes` are classes the tool defined;
    `modules`: the run's module proxies as `judge_modules` judged them."""

    def __init__(self, modules: JudgedModules | None = None) -> None:
        self.tool_classes: set[type] = set()
        self.formatter = _SafeFormatter(self.getattr, self.getitem)
        verdicts = Verdicts()
        self._judge = verdicts.judge
        self._passing = verdicts.types
        self._modules: JudgedModules = modules or {}

    def getattr(self, ob: Any, name: Any, default: Any = _MISSING) -> Any:
        allowed = _PLAIN_ATTRS.get(type(ob))
        if allowed is not None and type(name) is str and name in allowed:
            if default is _MISSING:
                return _builtin_getattr(ob, name)
            return _builtin_getattr(ob, name, default)
        module = self._modules.get(id(ob))
        if module is not None and module[0] is ob and type(name) is str and name in module[1]:
            return _builtin_getattr(ob, name)  # judged by judge_modules
        if type(name) is not str:
            raise TypeError("attribute name must be a string")
        if name.startswith("_") or name in BLOCKED_ATTRS:
            raise AttributeError(f"attribute {name!r} is not accessible to tools")
        if name in _FORMAT_ATTRS:
            return self.format_attr(ob, name, default)
        if name == "obj" and isinstance(ob, BaseException):  # CVE-2024-47532
            raise AttributeError("exception attribute 'obj' is not accessible to tools")
        if isinstance(ob, string.Formatter) or (
            isinstance(ob, type) and issubclass(ob, string.Formatter)
        ):
            raise AttributeError("string.Formatter is not available to tools")
        value = (
            _builtin_getattr(ob, name)
            if default is _MISSING
            else _builtin_getattr(ob, name, default)
        )
        if type(value) is _FUNCTION and not _library_api(ob, value):
            raise AttributeError(
                f"attribute {name!r} gives a library function outside its module (an unbound "
                "method runs with any object as self), which is not accessible to tools"
            )
        if isinstance(value, property) and not _tool_property(value):
            raise AttributeError(
                f"attribute {name!r} gives a library property (its getter runs with any "
                "object: classmethod(ChainMap.parents) made classes), not accessible to tools"
            )
        if type(value) in self._passing:  # values, and types whose instances passed
            return value
        return self._judge(value, name)

    def format_attr(self, ob: Any, name: str, default: Any) -> Any:
        """`format` / `format_map` (issue 9): on a str or a UserString (or any
        subclass of either) they are the guarded formatter over the text; on a
        class of those, refused; on anything else, only a tool class's own
        method (never a library method that may call the real `str.format`),
        and whatever an object forwarding the lookup returns is judged."""
        if isinstance(ob, str | UserString):
            text = str.__str__(ob) if isinstance(ob, str) else str(ob.data)
            fmt = self.formatter
            if name == "format":
                return lambda *a, **kw: fmt.vformat(text, a, kw)
            return lambda mapping: fmt.vformat(text, (), mapping)
        cls = ob if isinstance(ob, type) else type(ob)
        if isinstance(ob, type) and issubclass(ob, str | UserString):
            raise AttributeError("use 'text'.format(...) on a string instead of str.format")
        owner = next((c for c in cls.__mro__ if name in vars(c)), None)
        if owner is not None and owner not in self.tool_classes:
            raise AttributeError(f"{cls.__name__}.{name} is not accessible to tools")
        # Found nowhere on the class: an object forwarding the lookup (a typing
        # alias to its origin, issue 21). What it returns decides.
        if default is _MISSING:
            return self._judge(builtins.getattr(ob, name), name)
        return self._judge(builtins.getattr(ob, name, default), name)

    @staticmethod
    def getitem(ob: Any, key: Any) -> Any:
        return ob[key]

    def write(self, ob: Any) -> Any:
        cls = type(ob)
        if cls in _WRITABLE_EXACT:
            return ob
        # the real MRO, never `isinstance`: UserDict, UserList and ChainMap are ABCs,
        # and `UserDict.register(cached_property)` had made every cached_property
        # writable (the attacker pass after session 30's third; register is refused
        # too, forge.policy.verdict)
        mro = type.__dict__["__mro__"].__get__(cls)
        if not isinstance(ob, type) and any(c in _WRITABLE_SET for c in mro):
            return ob
        if (isinstance(ob, type) and ob in self.tool_classes) or any(
            c in self.tool_classes for c in mro
        ):
            return ob
        return _DeniedWrite(ob)

    def aug_item(self, ob: Any, key: Any, op: str, value: Any) -> None:
        self.write(ob)[key] = _inplacevar(op, self.getitem(ob, key), value)

    def aug_attr(self, ob: Any, name: str, op: str, value: Any) -> None:
        setattr(self.write(ob), name, _inplacevar(op, self.getattr(ob, name), value))

    def make_class(self, name: str, bases: tuple[Any, ...], ns: dict[str, Any], **kw: Any) -> Any:
        """Every class statement of a tool (RestrictedPython passes it as the
        metaclass). Refuses a base of NOT_SUBCLASSABLE, before the class is made
        and, in case a library metaclass changed the bases, in what it made."""
        meta: type = type
        for base in bases:
            _subclassable(base)
            bmeta = type(base)
            if issubclass(bmeta, meta):
                meta = bmeta
        cls = meta(name, bases, ns, **kw)
        _subclassable(cls)
        self.tool_classes.add(cls)
        record(cls)  # the mark forge.checked_types `dataclass` asks for (forge.tool_classes)
        return cls


_FUNCTION = types.FunctionType
_MODULE_LIKE: tuple[type, ...] = (types.SimpleNamespace, ShimModule)


def _library_api(ob: Any, value: types.FunctionType) -> bool:
    """Whether a plain function looked up on `ob` may be held: the tool's own (its
    code compiled as `<tool>`), or one a module proxy offers. Any other library
    function reached by an attribute (an unbound method from a class or a typing
    alias, a property's `fget`, a `partial`'s `func`) runs its library code with
    whatever object the tool passes as `self`: `UserList.copy(int)` returned the real
    `type` (`int.__class__(int)`), and `ChainMap.new_child(K, name)` made a class from
    any namespace, past `make_class` (the attacker pass after the `register` one)."""
    return value.__code__.co_filename == "<tool>" or type(ob) in _MODULE_LIKE


def _tool_property(value: property) -> bool:
    """A property whose getter, setter and deleter are the tool's own (or none)."""
    return all(
        f is None or (type(f) is _FUNCTION and f.__code__.co_filename == "<tool>")
        for f in (value.fget, value.fset, value.fdel)
    )


def _subclassable(cls: Any) -> None:
    """TypeError if `cls` is, or inherits from, a class in NOT_SUBCLASSABLE."""
    if isinstance(cls, type):
        mro = type.__dict__["__mro__"].__get__(cls)  # never a metaclass's own answer
        refused = next((c for c in mro for r in NOT_SUBCLASSABLE if c is r), None)
        if refused is not None:
            raise TypeError(f"tools may not subclass {refused.__module__}.{refused.__qualname__}")


def _inplacevar(op: str, x: Any, y: Any) -> Any:
    fn = _INPLACE.get(op)
    if fn is None:
        raise SyntaxError(f"unsupported in-place operator {op}")
    return fn(x, y)


def _apply(f: Any, *args: Any, **kwargs: Any) -> Any:
    """`f(*args, **kwargs)` for a call with `*`/`**`: a keyword name from `**` must be
    an identifier a tool could write (`f(**{"_x": 1})` reached the library's private
    parameters, `JSONEncoder.iterencode(_one_shot=...)`: session 32's attacker pass)."""
    for key in kwargs:
        if str.startswith(key, "_") or not str.isidentifier(key):  # never a subclass's
            raise TypeError(f"keyword argument {key!r}: tools may not pass this name")
    return f(*args, **kwargs)


def _unpack_sequence(it: Any, spec: Mapping[str, Any], getiter: Any) -> Any:
    """RestrictedPython's guarded_unpack_sequence: `list(getiter(it))`, then the same
    for each nested target. Without nested targets and with the plain `iter` guard
    (ours) that list only repeats what the interpreter's own unpacking does (it
    calls `iter(it)` and takes the items), so `it` is unpacked as it is: the same
    values, the same `__iter__` run, the same errors for too few or too many (an
    endless iterator is refused after one item too many, not listed forever)."""
    if getiter is iter and not spec["childs"]:
        return it
    return _guarded_unpack(it, spec, getiter)


def _iter_unpack_sequence(it: Any, spec: Mapping[str, Any], getiter: Any) -> Any:
    """RestrictedPython's guarded_iter_unpack_sequence (a generator yielding
    `guarded_unpack_sequence(item)` for each item of `getiter(it)`); same shortcut as
    above: the loop iterates `it` and unpacks each item itself (no list per item)."""
    if getiter is iter and not spec["childs"]:
        return it
    return _guarded_iter_unpack(it, spec, getiter)
