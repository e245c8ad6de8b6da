"""forge.policy.verdict.judge: an attribute is judged by what the lookup
returns (issue 21, item 1). A table of values a tool must never hold, each
refused whatever name it came under, and of values real tools use, each passed
through unchanged."""

from __future__ import annotations

import _string  # type: ignore[import-not-found]
import builtins
import collections
import gc
import hashlib
import json
import math
import re
import string
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from forge.policy.verdict import Verdicts, judge


def _frame() -> types.FrameType:
    frame = sys._getframe()
    return frame


def _traceback() -> types.TracebackType:
    try:
        raise ValueError("x")
    except ValueError as exc:
        assert exc.__traceback__ is not None
        return exc.__traceback__


def _cell() -> types.CellType:
    x = 1

    def inner() -> int:
        return x

    assert inner.__closure__ is not None
    return inner.__closure__[0]


def _gen() -> Iterator[int]:
    yield 1


def _tool_function() -> int:
    return 1


class _ToolClass:
    def method(self) -> int:
        return 1


REFUSED: dict[str, Callable[[], Any]] = {
    "unbound str.format": lambda: str.format,
    "unbound str.format_map": lambda: str.format_map,
    "bound str.format": lambda: "{0.__class__}".format,
    "bound str.format_map on a str subclass": lambda: type("S", (str,), {})("x").format_map,
    "UserString.format function": lambda: collections.UserString.format,
    "UserString.format bound": lambda: types.MethodType(
        collections.UserString.format, collections.UserString("x")
    ),
    "UserString.format_map function": lambda: collections.UserString.format_map,
    "string.Formatter class": lambda: string.Formatter,
    "string.Formatter subclass": lambda: type("F", (string.Formatter,), {}),
    "string.Formatter instance": lambda: string.Formatter(),
    "string.Formatter.get_field function": lambda: string.Formatter.get_field,
    "string.Formatter().vformat bound": lambda: string.Formatter().vformat,
    "_string.formatter_field_name_split": lambda: _string.formatter_field_name_split,
    "frame": _frame,
    "generator frame": lambda: _gen().gi_frame,
    "traceback": _traceback,
    "code object": lambda: _tool_function.__code__,
    "cell": _cell,
    "real module": lambda: json,
    "sys module": lambda: sys,
    "builtins module": lambda: builtins,
    "function globals": lambda: _tool_function.__globals__,
    "builtins dict": lambda: vars(builtins),
    "real getattr": lambda: builtins.getattr,
    "real eval": lambda: builtins.eval,
    "real __import__": lambda: builtins.__import__,
    "real open": lambda: builtins.open,
    "real vars": lambda: builtins.vars,
    "sys._getframe": lambda: sys._getframe,
    "gc.get_objects": lambda: gc.get_objects,
    "class type": lambda: type,
    "class object": lambda: object,
    "class super": lambda: super,
    "FunctionType": lambda: types.FunctionType,
    "CodeType": lambda: types.CodeType,
    "ModuleType": lambda: types.ModuleType,
    "TracebackType": lambda: types.TracebackType,
}

ALLOWED: dict[str, Callable[[], Any]] = {
    "text": lambda: "{0.__class__}",
    "number": lambda: 3,
    "list": lambda: [1, 2],
    "plain dict": lambda: {"a": 1},
    "a str method": lambda: "x".upper,
    "str.join unbound": lambda: str.join,
    "str.maketrans": lambda: str.maketrans,
    "math.sqrt": lambda: math.sqrt,
    "hashlib.sha256": lambda: hashlib.sha256,
    "hash object method": lambda: hashlib.sha256().hexdigest,
    "json.dumps": lambda: json.dumps,
    "JSONDecoder.parse_string (_json)": lambda: json.JSONDecoder().parse_string,
    "pattern method": lambda: re.compile("x").match,
    "tool function": lambda: _tool_function,
    "tool method": lambda: _ToolClass().method,
    "tool class": lambda: _ToolClass,
    "str class": lambda: str,
    "exception class": lambda: ZeroDivisionError,
    "UserString class": lambda: collections.UserString,
    "real len": lambda: builtins.len,
    "real sorted": lambda: builtins.sorted,
    "generator": _gen,
    "Template": lambda: string.Template("$a"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_whatever_the_name(name: str) -> None:
    value = REFUSED[name]()
    with pytest.raises(AttributeError, match="not accessible to tools"):
        judge(value, "harmless_name")


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_allowed_values_pass_unchanged(name: str) -> None:
    value = ALLOWED[name]()
    assert judge(value, "x") is value


def test_the_run_memo_never_lets_a_refused_value_through() -> None:
    """`Verdicts` (what the guards use) memoises types and classes that passed;
    after every allowed value has been judged twice, every refused one still fails."""
    verdicts = Verdicts()
    for make in ALLOWED.values():
        value = make()
        assert verdicts.judge(value, "x") is value
        assert verdicts.judge(value, "x") is value
    for make in REFUSED.values():
        with pytest.raises(AttributeError, match="not accessible to tools"):
            verdicts.judge(make(), "harmless_name")
        with pytest.raises(AttributeError, match="not accessible to tools"):
            verdicts.judge(make(), "harmless_name")  # refusals are never memoised
