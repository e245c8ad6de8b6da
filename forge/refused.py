"""What no tool may hold, whoever hands it over: the objects and classes that reach
code, frames, modules or any class (forge.policy.verdict judges attribute results
by them; forge.checked_types judges the values its dataclass helpers read for a
tool, with `why_refused`: the verdict's rules that need no allow-list). Imports
nothing of forge, so both may use it."""

from __future__ import annotations

import abc
import string
import types
from collections import UserString
from typing import Any

REFUSED_INSTANCES: tuple[type, ...] = (
    types.FrameType,
    types.TracebackType,
    types.CodeType,
    types.CellType,
    types.ModuleType,
    string.Formatter,
)
# Classes whose instances a tool must never build (or that hand out any class).
REFUSED_CLASSES = frozenset(
    {
        type,
        object,
        super,
        types.FunctionType,
        types.MethodType,
        types.CodeType,
        types.FrameType,
        types.TracebackType,
        types.CellType,
        types.ModuleType,
        types.BuiltinFunctionType,
    }
)


def _formatter_functions() -> frozenset[int]:
    """Ids of the functions that format through the real `str.format` unguarded
    (`string.Formatter`'s, `UserString.format`/`format_map`); the objects live as
    long as their classes, so the ids stay theirs."""
    funcs: list[object] = [
        v for v in vars(string.Formatter).values() if isinstance(v, types.FunctionType)
    ]
    funcs += [UserString.format, UserString.format_map]
    return frozenset(id(f) for f in funcs)


# `ABCMeta.register`: it changes what `isinstance` answers for every library and for
# forge's own checks (forge.policy.verdict refuses it as an attribute result; a
# dataclass field resolved through the metaclass handed it over, atk6 F1)
REGISTER_FUNCTIONS = frozenset({id(abc.ABCMeta.register)})
FORMAT_FUNCTIONS = _formatter_functions()
FORMAT_DESCRIPTORS = frozenset({id(str.format), id(str.format_map)})


def why_refused(value: Any) -> str | None:
    """What `value` is, if no tool may hold it by the rules forge.policy.verdict
    judges attribute results with, as far as they need no allow-list: `register` and
    the unguarded formatters (plain, or bound to anything, as a method or a C
    builtin), the classes and objects above, a namespace of globals or builtins.
    None if it passes (a C function of a module is judged by the allow-list at its
    lookup)."""
    cls = type(value)
    if cls is types.MethodType or cls is types.FunctionType:
        func = value.__func__ if cls is types.MethodType else value
        if id(func) in REGISTER_FUNCTIONS:
            return "ABCMeta.register (it changes what isinstance answers)"
        if id(func) in FORMAT_FUNCTIONS or (
            cls is types.MethodType and isinstance(value.__self__, string.Formatter)
        ):
            return "a method that formats through str.format unguarded"
        return None
    if cls is types.BuiltinFunctionType:
        owner = value.__self__
        if isinstance(owner, str) and value.__name__ in ("format", "format_map"):
            return "the real str.format"
        return "a string.Formatter method" if isinstance(owner, string.Formatter) else None
    if cls is types.MethodDescriptorType:
        return "the real str.format" if id(value) in FORMAT_DESCRIPTORS else None
    if cls is dict:
        if "__builtins__" in value or "__import__" in value:
            return "a namespace of globals or builtins"
        return None
    if isinstance(value, type):
        if type in type.__dict__["__mro__"].__get__(value):
            return "a metaclass"
        if value in REFUSED_CLASSES or issubclass(value, string.Formatter):
            return f"the class {value.__name__}"
        return None
    if isinstance(value, REFUSED_INSTANCES):
        return f"a {cls.__name__} object"
    return None
