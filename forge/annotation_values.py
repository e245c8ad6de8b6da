"""What the real `dataclasses.dataclass` reads of a class's annotations, made safe to
read after forge checked it (forge.checked_types.dataclass).

The check looked at the names; the real `dataclass` then iterated the same dict and
asked `isinstance(value, str)` of each value. `isinstance` falls back to the value's
`__class__`, and a value whose class makes `__class__` a property ran the tool's
code in the middle of that loop: it swapped a later key for one holding code, and
`dataclass` pasted the name into the text it execs with the real builtins (the
attacker pass of session 32, after it had the real `type` from library code).

So, once the names passed: no value may answer an attribute lookup with code of
its own (`__class__` or `__getattribute__` defined in Python on its class's MRO), and
the class gets a fresh plain dict with exact `str` keys that no tool holds a
reference to, which is what the real `dataclass` reads.
"""

from __future__ import annotations

import types
from typing import Any

_MRO = type.__dict__["__mro__"]
_DICT = type.__dict__["__dict__"]
_C_SLOT = (types.WrapperDescriptorType, types.MethodDescriptorType, types.GetSetDescriptorType)


def answers_lookups_itself(value: object) -> bool:
    """Whether an attribute lookup on `value` (`__class__`, as `isinstance` makes one)
    can run Python code: a `__class__` anywhere on its class's MRO but `object`'s, or
    a `__getattribute__` written in Python."""
    for klass in _MRO.__get__(type(value)):
        if klass is object:
            continue
        own = _DICT.__get__(klass)
        if "__class__" in own:
            return True
        found = own.get("__getattribute__")
        if found is not None and not isinstance(found, _C_SLOT):
            return True
    return False


def snapshot(target: type, annotations: dict[Any, Any], what: str) -> dict[str, Any]:
    """Give `target` a fresh copy of its `annotations` (a plain dict), keys as exact
    `str`, and return it: what the names check and the real `dataclass` then read.
    TypeError for a key that is not a `str` or a value that answers lookups itself."""
    fresh: dict[str, Any] = {}
    for key, value in list(annotations.items()):
        if not issubclass(type(key), str):  # never `isinstance`: it asks `__class__`
            raise TypeError(f"{what}: an annotation name is a {type(key).__name__}")
        if answers_lookups_itself(value):
            raise TypeError(
                f"{what}: the annotation of {key!r} is a {type(value).__name__} whose class"
                " answers attribute lookups with code of its own"
            )
        fresh[str.__str__(key)] = value
    type.__setattr__(target, "__annotations__", fresh)
    return fresh
