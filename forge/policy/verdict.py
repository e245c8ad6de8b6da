"""Layer 2, run time: judge an attribute by WHAT THE LOOKUP RETURNS (issue 21).

`Guards.getattr` refuses names (underscores, frame/code attributes), but many
objects forward attribute lookups elsewhere: a `typing` generic alias hands any
non-dunder name to its origin (`Annotated[str, 0].format` is the real
`str.format`), a `Generic` subclass's `S[int]` to `S`, a shim module to its
table. Where a name was found says little; what came back says everything. So
every attribute the slow path looks up passes `judge`, which refuses:

- the real `str.format` / `str.format_map` (unbound, or bound to any string),
  `collections.UserString.format` / `format_map` (which call them), and every
  method, instance or subclass of `string.Formatter` (their `get_field` walks
  attributes unguarded: CVE-2023-41039);
- frames, tracebacks, code objects, cells and real modules (a tool only ever
  holds module proxies), and the classes that build them (`type`, `object`,
  `super`, `types.FunctionType`, `CodeType`, `ModuleType`, ...);
- a namespace dict: a module's or function's globals, or a builtins dict;
- a C function of a module outside the allow-list (`sys`, `gc`, `posix`,
  `_string`, ...), and a real builtin that is not one of the tool's builtins
  (`getattr`, `eval`, `__import__`, `open`, ...).

Everything else (values, the tool's own functions and methods, library methods
bound to library objects) passes unchanged.
"""

from __future__ import annotations

import builtins
import importlib
import string
import types
from typing import Any

from forge.modules import ALLOWED, SHIMMED, SOURCES
from forge.policy.builtin_names import SAFE_BUILTINS
from forge.refused import FORMAT_FUNCTIONS, REGISTER_FUNCTIONS, why_refused
from forge.refused import REFUSED_INSTANCES as _REFUSED_INSTANCES

# Results that are plain values: nothing to judge (the common case, kept first).
_INERT = frozenset(
    {str, int, float, bool, complex, bytes, tuple, list, set, frozenset, type(None), range}
)
_FUNCTION = types.FunctionType
_METHOD = types.MethodType
# Result types judged value by value (never memoised by type).
_PER_VALUE = frozenset(
    {
        types.MethodType,
        types.FunctionType,
        types.BuiltinFunctionType,
        types.MethodDescriptorType,
        dict,
    }
)
_FORMAT_NAMES = frozenset({"format", "format_map"})
# C modules whose functions a tool may hold: those the allowed names are
# (`_c_modules`; the shims are forge's own functions) and the accelerators
# allowed objects hand out (`json.JSONDecoder().parse_string` is `_json`'s).
_ACCELERATORS = frozenset({"_json"})


def _c_modules() -> frozenset[str]:
    names = set(_ACCELERATORS)
    for module_name, attrs in ALLOWED.items():
        if module_name in SHIMMED or module_name in SOURCES:
            continue
        module = importlib.import_module(module_name)
        for attr in attrs:
            value = getattr(module, attr)
            owner = getattr(value, "__self__", None)
            if isinstance(value, types.BuiltinFunctionType) and isinstance(owner, types.ModuleType):
                names.add(owner.__name__)
    return frozenset(names)


# `ABCMeta.register` (`UserDict.register`, `typing.Sequence.register`, ...): it
# changes what `isinstance` answers for every library and for forge's own guards
# (the write guard once took a registered class as writable: the attacker pass
# after the `cached_property` one). Refused as a value, bound or not. The ids are
# forge.refused's, shared with the dataclass helpers' `why_refused`; the fast path of
# `Verdicts.judge` passes any function or method whose function is not one of these.
_DENIED_FUNCTIONS = FORMAT_FUNCTIONS | REGISTER_FUNCTIONS
C_MODULES = _c_modules()
_BUILTIN_NAMES = frozenset(SAFE_BUILTINS)


def judge(value: Any, name: str) -> Any:
    """`value` if a tool may hold it; else AttributeError saying what it is."""
    cls = type(value)
    if cls in _INERT:
        return value
    why = _why(value, cls)
    if why is None:
        return value
    raise AttributeError(f"attribute {name!r} gives {why}, which is not accessible to tools")


class Verdicts:
    """`judge` with a memo of one run: the types whose every instance passes
    (values judged by their type alone) and the classes that passed (a class is
    judged as a value). Method, function and dict results are judged each time."""

    __slots__ = ("_classes", "types")

    def __init__(self) -> None:
        self.types: set[type] = set(_INERT)  # read by Guards.getattr before calling
        self._classes: set[type] = set()

    def judge(self, value: Any, name: str) -> Any:
        cls = type(value)
        if cls in self.types:
            return value
        if cls is type and value in self._classes:
            return value
        if cls is _FUNCTION:  # the tool's own functions and the libraries': inline
            if id(value) not in _DENIED_FUNCTIONS:
                return value
        elif cls is _METHOD:
            # a method bound to a Formatter is one of Formatter's functions: a tool
            # cannot subclass Formatter (the class is refused), so `__func__` decides
            if id(value.__func__) not in _DENIED_FUNCTIONS:
                return value
        elif isinstance(value, type):
            if value not in self._classes:
                judge(value, name)
                self._classes.add(value)
            return value
        judge(value, name)
        if cls not in _PER_VALUE and not issubclass(cls, _REFUSED_INSTANCES):
            self.types.add(cls)
        return value


def _why(value: Any, cls: type) -> str | None:
    """forge.refused's rules (shared with the dataclass helpers), and for a C function
    the allow-list of modules and builtins."""
    if cls is types.BuiltinFunctionType:
        return _why_builtin(value)
    return why_refused(value)


def _why_builtin(value: Any) -> str | None:
    owner = value.__self__
    if isinstance(owner, str) and value.__name__ in _FORMAT_NAMES:
        return "the real str.format"
    if isinstance(owner, string.Formatter):
        return "a string.Formatter method"
    if not isinstance(owner, types.ModuleType):
        return None  # a method bound to an object (a value, a pattern, a hash, ...)
    if owner is builtins:
        return None if value.__name__ in _BUILTIN_NAMES else "a real builtin"
    return None if owner.__name__ in C_MODULES else f"a function of {owner.__name__}"
