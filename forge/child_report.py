"""What a sandbox child reports about its one call: the error documents (with the
tool's own line number, never more of a traceback) and the result serialised
to JSON inside the child, capped, so only bytes leave (forge.child).

The result is first copied into plain JSON data (`plain`) while the call still
runs, before its checks (the write budget: forge.write_budget): `json.dumps` of
the tool's own object called a `dict` subclass's `items()`, tool code after the
checks that wrote a 16 MiB half-written file into a call reported as ok (the
attacker pass atk1). The copy reads every container through the C methods of
its real base class (`dict.items`, `list.copy`, `str.__str__`, ...), never a
method the tool's class may override, so no tool code runs in it.
"""

from __future__ import annotations

import json
import traceback
from collections import OrderedDict
from typing import Any

from forge.protocol.fields import ErrorKind
from forge.protocol.frames import frame
from forge.protocol.jobs import failure_doc

MAX_MESSAGE = 2000
NOT_JSON = (
    "the result is not JSON-serialisable; return only dict, list, str, int, float, bool or None"
)
_IS_SUBCLASS = type.__dict__["__subclasscheck__"]  # the real MRO: no metaclass answers
_NAME = type.__dict__["__name__"].__get__
# exact types as they are; subclasses (an IntEnum, a str Enum) as their base's value,
# read by the base's C method (never the tool's override)
_NONE = type(None)
# by id: a set of the types themselves would hash a tool metaclass's `__hash__`
_EXACT_IDS = frozenset(map(id, (str, int, float, bool, _NONE)))
_SCALARS = ((str, str.__str__), (int, int.__int__), (float, float.__float__))

MEMORY_ERROR = json.dumps(failure_doc("memory", "the tool ran out of memory")).encode()
FRAMED_MEMORY_ERROR = frame(MEMORY_ERROR)


class NotPlain(TypeError):
    """A result (or part of one) that is not plain JSON data."""


def tool_line(exc: BaseException) -> str:
    line = ""
    for tb_frame, lineno in traceback.walk_tb(exc.__traceback__):
        if tb_frame.f_code.co_filename == "<tool>":
            line = f" (line {lineno})"
    return line


def error(kind: ErrorKind, message: str) -> dict[str, Any]:
    return failure_doc(kind, message[:MAX_MESSAGE])


def describe(exc: BaseException) -> str:
    try:
        text = str(exc)
    except BaseException:
        text = "<unprintable>"
    name = _NAME(type(exc))
    return f"{name}: {text[:MAX_MESSAGE]}{tool_line(exc)}" if text else name + tool_line(exc)


def plain(value: Any) -> Any:
    """A copy of `value` made of exact `dict`, `list`, `str`, `int`, `float`, `bool`
    and None, as `json.dumps` would write it (a tuple as a list, a subclass of a
    JSON type as its base's value: a `Counter` or `OrderedDict` as a dict in its own
    order), without running any code of the tool's; NotPlain (or RecursionError)
    for anything else, or a container inside itself."""
    return _plain(value, set())


def _plain(value: Any, inside: set[int]) -> Any:
    kind = type(value)
    if _exact(kind):
        return value
    pairs: list[tuple[Any, Any]] | None = None
    items: Any = None
    if kind is dict:  # exact containers: their own C methods, nothing to override
        pairs = list(value.items())
    elif kind is list or kind is tuple:
        items = value
    else:
        for base, read in _SCALARS:
            if _IS_SUBCLASS(base, kind):
                return read(value)
        if _IS_SUBCLASS(dict, kind):
            pairs = _pairs(value)
        elif _IS_SUBCLASS(list, kind):
            items = list.copy(value)
        elif _IS_SUBCLASS(tuple, kind):
            items = list(tuple.__iter__(value))
        else:
            raise NotPlain(f"Object of type {_NAME(kind)} is not JSON serializable")
    if id(value) in inside:
        raise NotPlain("Circular reference detected")
    inside.add(id(value))
    if pairs is not None:
        out: Any = {
            k if id(type(k)) in _EXACT_IDS else _key(k): v
            if id(type(v)) in _EXACT_IDS
            else _plain(v, inside)
            for k, v in pairs
        }
    else:
        out = [item if id(type(item)) in _EXACT_IDS else _plain(item, inside) for item in items]
    inside.discard(id(value))
    return out


def _exact(kind: type) -> bool:
    return id(kind) in _EXACT_IDS


def _pairs(mapping: Any) -> list[tuple[Any, Any]]:
    """The items of a dict subclass, in its own order (an `OrderedDict`'s by its
    links), read without hashing a key or calling a method of the tool's."""
    pairs = list(dict.items(mapping))
    # walking an OrderedDict's links hashes its keys: only exact ones (else dict order)
    if _IS_SUBCLASS(OrderedDict, type(mapping)) and all(_exact(type(k)) for k, _ in pairs):
        by_key = dict(pairs)
        pairs = [(k, by_key[k]) for k in OrderedDict.keys(mapping)]
    return pairs


def _key(key: Any) -> Any:
    """A dict key as JSON allows it: a str, int, float, bool or None."""
    kind = type(key)
    if _exact(kind):
        return key
    for base, read in _SCALARS:
        if _IS_SUBCLASS(base, kind):
            return read(key)
    raise NotPlain(f"keys must be str, int, float, bool or None, not {_NAME(kind)}")


def serialise(payload: dict[str, Any], max_output: int) -> bytes:
    try:
        data = json.dumps(payload, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except MemoryError:
        return MEMORY_ERROR
    except BaseException as exc:
        data = json.dumps(error("output", f"{NOT_JSON} ({describe(exc)})")).encode()
    if len(data) > max_output:
        data = json.dumps(
            error("output", f"the result is {len(data)} bytes; the limit is {max_output}")
        ).encode()
    return data
