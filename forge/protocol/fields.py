"""Checked fields of a JSON document, and the value types both wires share.

Every decoder reads its document through these checks, so a wrong type or an
unknown error kind becomes a `ProtocolError`, never an odd value further on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, get_args

from forge.protocol.frames import ProtocolError

ErrorKind = Literal["lint", "compile", "runtime", "denied", "timeout", "memory", "output", "quota"]
ERROR_KINDS: tuple[ErrorKind, ...] = get_args(ErrorKind)
Marks = tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class Failure:
    kind: ErrorKind
    message: str


def dump(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def load(doc: bytes) -> dict[str, Any]:
    try:
        data = json.loads(doc)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ProtocolError("not a JSON object")
    return data


def field(data: dict[str, Any], key: str, *types: type) -> Any:
    value = data.get(key)
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise ProtocolError(f"{key!r} has the wrong type")
    return value


def str_dict(value: dict[str, Any], what: str) -> dict[str, str]:
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ProtocolError(f"{what} must map strings to strings")
    return value


def str_tuple(value: list[Any], what: str) -> tuple[str, ...]:
    if not all(isinstance(v, str) for v in value):
        raise ProtocolError(f"{what} must be a list of strings")
    return tuple(value)


def error_kind(value: object) -> ErrorKind:
    for kind in ERROR_KINDS:
        if value == kind:
            return kind
    raise ProtocolError(f"unknown error kind {value!r}")


FAULTS = "faults@"  # a mark named so carries a child's minor page faults so far, not a time
CPU = "cpu@"  # a mark named so carries a child's CPU time so far (user + system, µs)


def marks(value: object) -> Marks:
    if value is None:
        return ()
    if not isinstance(value, list | tuple) or not all(
        isinstance(m, list | tuple) and len(m) == 2 and isinstance(m[0], str) and type(m[1]) is int
        for m in value
    ):
        raise ProtocolError("trace must be a list of [name, nanoseconds]")
    return tuple((str(n), int(t)) for n, t in value)
