"""Library methods that refuse a `self` that is not one of their class's instances.

A C method checks its `self` (`list.copy(int)` is a TypeError); a Python method
does not: `UserString.replace(K, 'x')` runs with any object as `self`, and
`self.__class__(self.data.replace(...))` then builds from whatever `K` answers.
With `K` a tool class whose `data` answers `int`, that was the real `type`
(`type(int)`): the attacker pass atk1 (session 32) handed the CLASS `UserString`
(or `Annotated[UserString, 0]`, which forwards lookups to it) where library code
expected a string, so the library's own plain `text.expandtabs(tabsize)` (in
`TextWrapper.wrap`) or `self.data.replace(old, new)` (in a `UserString`
subclass) was that unbound call, with the tool's class as `self`. forge's guards
judge what a TOOL's lookups return (forge.policy.guards refuses unbound library
functions); a lookup made by library code is never judged.

So, in each sandbox helper before its zygote forks (forge.worker; never in the
daemon), `protect` replaces every plain Python function of every library class a
tool can reach (the offered classes, the classes of the offered values, every
class of the offered modules, and their bases and metaclasses, by the real MRO)
with a wrapper that first checks, by the real MRO (`type.__subclasscheck__`,
which neither a `__class__` property nor `ABCMeta.register` can answer), that
`self` is an instance of the class the function was found in. The methods of
`UserString`, `UserList.copy`, `UserDict.copy`, `Counter.copy`, `ChainMap.copy`
and `new_child`, and every other method that builds `self.__class__(...)` /
`type(self)(...)` or calls `self.<name>(...)`, are among them.

Left as they are, and why:
- `__new__`, classmethods and staticmethods: `__new__` receives a class
  (`Enum.__new__` is even stored as a plain function on `Flag`); a classmethod is
  bound to the class it is looked up on, and a tool never holds a raw one
  (forge.policy.guards).
- functions whose first parameter is not `self`, `cls`, `mcls` or `metacls`:
  those `Enum._generate_next_value_(name, ...)` (called unbound by design) and
  `Protocol`'s `_proto_hook(other)`; `Fraction`'s and `NormalDist`'s operators
  (`a`, `x1`: reached only by operators, which look up on the type, and building
  `Fraction(...)` / `NormalDist(...)` by name).
- functions not defined in a class body (`typing._no_init_or_replace_init`,
  which `typing` compares by identity; `re`'s `global_flag_repr`).
- functions `exempt` names: those forge.policy.verdict refuses by identity
  (`UserString.format`, `ABCMeta.register`), which must stay the objects it knows.
- forge's own classes.
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable, Iterable
from typing import Any, cast

_MRO = type.__dict__["__mro__"].__get__
_IS_SUBCLASS = type.__dict__["__subclasscheck__"]  # the real MRO: no metaclass answers
_NAME = type.__dict__["__name__"].__get__
_SELF_NAMES = frozenset({"self", "cls", "mcls", "metacls"})
_COPIED = ("__module__", "__name__", "__qualname__", "__doc__")
_WRAPPERS: set[int] = set()  # ids of the wrappers made (never wrapped twice)
_VARARGS = 0x04 | 0x08  # a code object's CO_VARARGS and CO_VARKEYWORDS flags


def checked_method(owner: type, func: types.FunctionType) -> types.FunctionType:
    """`func` of class `owner`, refusing a `self` whose real class does not derive
    from `owner`. A method of `self` alone (`__next__`, `__iter__`, `keys`) gets a
    wrapper without `*args, **kwargs`: the same check, without packing and unpacking
    arguments on every call (a CSV tool's `DictReader.__next__` runs once a row)."""

    def method(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        kind = type(self)
        if not _IS_SUBCLASS(owner, kind):
            raise TypeError(f"{owner.__name__}.{func.__name__}() {_refusal(self, kind)}")
        return func(self, *args, **kwargs)

    def self_only(self: Any, /) -> Any:
        kind = type(self)
        if not _IS_SUBCLASS(owner, kind):
            raise TypeError(f"{owner.__name__}.{func.__name__}() {_refusal(self, kind)}")
        return func(self)

    wrapper: Callable[..., Any] = self_only if _self_only(func) else method
    for name in _COPIED:
        setattr(wrapper, name, getattr(func, name))
    wrapper.__dict__.update(func.__dict__)  # `__isabstractmethod__` and the like
    _WRAPPERS.add(id(wrapper))
    return cast(types.FunctionType, wrapper)


def _self_only(func: types.FunctionType) -> bool:
    """Whether `func` takes its `self` and nothing else (no other parameter, no
    default, no `*args` or `**kwargs`)."""
    code = func.__code__
    varargs = code.co_flags & _VARARGS
    return code.co_argcount == 1 and not code.co_kwonlyargcount and not varargs


def _refusal(self: Any, kind: type) -> str:
    """Why `self` is refused, by its real class (never its own `__class__` answer)."""
    if _IS_SUBCLASS(type, kind):
        return f"was given the class {_NAME(self)}, not an object of its own class"
    return f"was given a {_NAME(kind)} object, not an object of its own class"


def _guarded(func: types.FunctionType) -> bool:
    """Whether `func`, found in a class's dict, is a method to check."""
    code = func.__code__
    if id(func) in _WRAPPERS or not code.co_argcount:  # (it counts positional-only ones)
        return False
    parts = func.__qualname__.split(".")
    in_class_body = len(parts) > 1 and parts[-2] != "<locals>"
    return in_class_body and code.co_varnames[0] in _SELF_NAMES


def library_classes(modules: Iterable[str], offered: Iterable[Any]) -> list[type]:
    """Every class a tool can reach through the library: the `offered` values that
    are classes and the classes of the others, the classes in the namespaces of the
    real `modules`, and, transitively, their bases, metaclasses and nested classes.
    forge's own classes and C classes (no Python functions) are left out later."""
    seen: dict[type, None] = {}
    todo: list[type] = []

    def add(value: Any) -> None:
        cls = value if isinstance(value, type) else type(value)
        if cls not in seen:
            seen[cls] = None
            todo.append(cls)

    for value in offered:
        add(value)
    for name in modules:
        for value in vars(importlib.import_module(name)).values():
            if isinstance(value, type):
                add(value)
    while todo:
        cls = todo.pop()
        for base in _MRO(cls):
            add(base)
        add(type(cls))
        for value in type.__dict__["__dict__"].__get__(cls).values():
            if isinstance(value, type):
                add(value)
    return list(seen)


def protect(classes: Iterable[type], exempt: Callable[[types.FunctionType], bool]) -> int:
    """Replace each method to check (`_guarded`, not `exempt`) of each of `classes`
    (not forge's own) by `checked_method`. Returns how many were replaced."""
    count = 0
    for cls in classes:
        if str(cls.__module__).split(".")[0] == "forge":
            continue
        own = type.__dict__["__dict__"].__get__(cls)
        for name, value in list(own.items()):
            if type(value) is not types.FunctionType or name == "__new__":
                continue
            if not _guarded(value) or exempt(value):
                continue
            type.__setattr__(cls, name, checked_method(cls, value))
            count += 1
    return count
