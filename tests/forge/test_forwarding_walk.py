"""The class, not the instance (issue 21, item 1): walk EVERY object a tool can
reach by attribute from the allowed modules, its builtins, sample objects of
every allowed type (a caught exception with its traceback among them) and a
`typing` alias over every reachable class (`Annotated[C, 0]` and `S[int]` for
`class S(C, Generic[T])`, which forward non-dunder lookups to `C`), through the
real `Guards.getattr`, and judge what comes back with a classifier written here,
independent of forge.policy.verdict. Nothing dangerous may come back.

On the code before the fix the alias walk found the real `str.format` and
`UserString.format` (the reported escape) and this test failed.
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import csv
import dataclasses
import datetime
import decimal
import fractions
import functools
import hashlib
import io
import itertools
import json
import random
import re
import statistics
import string
import textwrap
import types
import typing
import uuid
from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any

from forge.modules import build_proxies
from forge.policy.builtin_names import SAFE_BUILTINS
from forge.policy.guards import Guards

MAX_DEPTH = 4
_ACCELERATED = {"math", "itertools", "_functools", "_csv", "_json", "_hashlib", "decimal"}


def danger(value: Any) -> str | None:
    """What a tool must never hold, decided by what the value is."""
    if isinstance(value, types.FrameType | types.TracebackType | types.CodeType | types.ModuleType):
        return type(value).__name__
    if isinstance(value, types.CellType | string.Formatter):
        return type(value).__name__
    if value is str.format or value is str.format_map:
        return "unbound str.format"
    if isinstance(value, types.BuiltinFunctionType):
        owner = value.__self__
        if isinstance(owner, str) and value.__name__ in ("format", "format_map"):
            return "bound str.format"
        if owner is builtins and value.__name__ not in SAFE_BUILTINS:
            return f"builtin {value.__name__}"
        if isinstance(owner, types.ModuleType) and owner.__name__ not in _ACCELERATED | {
            "builtins"
        }:
            return f"C function {owner.__name__}.{value.__name__}"
    if isinstance(value, types.FunctionType | types.MethodType):
        qual = getattr(value, "__qualname__", "")
        if qual.startswith(("Formatter.", "UserString.format")):
            return qual
    if isinstance(value, dict) and ("__builtins__" in value or "__import__" in value):
        return "a namespace dict"
    if isinstance(value, type) and (
        value in (type, object, super, types.FunctionType, types.CodeType)
        or issubclass(value, string.Formatter)
    ):
        return f"class {value.__name__}"
    return None


def _caught() -> BaseException:
    try:
        raise ZeroDivisionError("x")
    except ZeroDivisionError as exc:
        return exc


def _samples() -> dict[str, Any]:
    """One object of every kind an allowed name makes (built here, as a tool would)."""

    @dataclasses.dataclass
    class Point:
        x: int = 0
        label: str = dataclasses.field(default="", metadata={"k": 1})

    @functools.lru_cache
    def cached(x: int) -> int:
        return x

    def gen() -> Iterator[int]:
        yield 1

    return {
        "err": _caught(),
        "gen": gen(),
        "pattern": re.compile(r"(?P<a>x)"),
        "match": re.match(r"(?P<a>x)", "x"),
        "scanner": re.compile("x").scanner("x"),
        "context": decimal.getcontext(),
        "decimal": decimal.Decimal("1.5"),
        "fraction": fractions.Fraction(1, 3),
        "datetime": datetime.datetime(2020, 1, 2, tzinfo=datetime.UTC),
        "decoder": json.JSONDecoder(),
        "encoder": json.JSONEncoder(),
        "reader": csv.reader(io.StringIO("a,b\n")),
        "dictreader": csv.DictReader(io.StringIO("a,b\n1,2\n")),
        "sniffed": csv.Sniffer().sniff("a,b\n1,2\n"),
        "template": string.Template("$a"),
        "wrapper": textwrap.TextWrapper(),
        "normal": statistics.NormalDist(0, 1),
        "rng": random.Random(1),
        "hash": hashlib.sha256(b"x"),
        "uuid": uuid.uuid5(uuid.NAMESPACE_DNS, "x"),
        "userstring": collections.UserString("x"),
        "userdict": collections.UserDict({"a": 1}),
        "chainmap": collections.ChainMap({"a": 1}),
        "deque": collections.deque([1]),
        "partial": functools.partial(len, [1]),
        "cached": cached,
        "count": itertools.count(),
        "groupby": itertools.groupby("aab"),
        "fields": dataclasses.fields(Point),
        "point": Point(),
        "typevar": typing.TypeVar("T", bound=str),
        "newtype": typing.NewType("N", str),
        "namedtuple": typing.NamedTuple("P", [("a", int)]),
        "collections_nt": collections.namedtuple("Q", "a"),
        "aliases": [
            list[str],
            typing.Callable[[str], str],
            typing.Literal["x"],
            typing.Optional[str],  # noqa: UP045
            typing.Type[str],  # noqa: UP006
            typing.ClassVar[str],
            typing.Dict[str, int],  # noqa: UP006
            typing.List["os.system"],  # noqa: UP006, F821
            list[str],
            dataclasses.InitVar[str],
        ],
    }


def _walk(roots: dict[str, Any], guards: Guards, depth: int) -> Iterator[tuple[str, Any]]:
    """(path, value) for everything reachable through the guard, breadth first."""
    seen: set[int] = set()
    queue = deque((path, ob, 0) for path, ob in roots.items())
    keep: list[Any] = []  # objects made by lookups stay alive, so ids stay unique
    while queue:
        path, ob, level = queue.popleft()
        if id(ob) in seen:
            continue
        seen.add(id(ob))
        keep.append(ob)
        if isinstance(ob, list | tuple) and level < depth:
            for i, item in enumerate(ob):
                yield f"{path}[{i}]", item  # items are judged too: `_getitem_` is plain
                queue.append((f"{path}[{i}]", item, level + 1))
        if isinstance(ob, Mapping) and level < depth:
            for key, item in list(ob.items())[:200]:
                yield f"{path}[{key!r}]", item
                queue.append((f"{path}[{key!r}]", item, level + 1))
        if level >= depth:
            continue
        try:
            names = set(dir(ob)) | {"format", "format_map"}
        except Exception:
            continue
        for name in sorted(names):
            try:
                value = guards.getattr(ob, name)
            except Exception:
                continue
            yield f"{path}.{name}", value
            queue.append((f"{path}.{name}", value, level + 1))


def _roots() -> dict[str, Any]:
    roots: dict[str, Any] = dict(build_proxies())
    roots.update({name: getattr(builtins, name) for name in SAFE_BUILTINS})
    roots.update(_samples())
    return roots


def _aliases(classes: list[type]) -> dict[str, Any]:
    """`Annotated[C, 0]` and `S[int]` (S a Generic subclass of C) for every class."""
    var = typing.TypeVar("V")
    out: dict[str, Any] = {}
    for cls in classes:
        with contextlib.suppress(TypeError):
            out[f"Annotated[{cls.__qualname__}]"] = typing.Annotated[cls, 0]
        try:
            out[f"Generic({cls.__qualname__})[int]"] = types.new_class(
                "S", (cls, typing.Generic[var])
            )[int]
        except (TypeError, AttributeError):  # final classes, odd metaclasses
            continue
    return out


def test_nothing_reachable_by_attribute_is_dangerous() -> None:
    guards = Guards()
    found = list(_walk(_roots(), guards, MAX_DEPTH))
    assert len(found) > 3000  # the walk did reach the allowed world
    bad = [(path, why) for path, value in found if (why := danger(value))]
    assert not bad, bad[:20]


def test_typing_aliases_over_every_reachable_class_forward_nothing_dangerous() -> None:
    guards = Guards()
    roots = _roots()
    reached = list(roots.values()) + [value for _, value in _walk(roots, guards, 3)]
    classes = list({id(c): c for c in reached if isinstance(c, type)}.values())
    classes += [str, collections.UserString, int, dict, list, BaseException]
    print(len(classes))
    assert len(classes) > 100
    aliases = _aliases(classes)
    bad = [(p, why) for p, value in _walk(aliases, guards, 2) if (why := danger(value))]
    assert not bad, bad[:20]


def test_the_walk_finds_the_reported_routes_without_the_guard() -> None:
    """The classifier and the alias walk are not blind: with plain getattr they
    find exactly the reported routes."""

    class Plain(Guards):
        def getattr(self, ob: Any, name: Any, default: Any = None) -> Any:
            if name.startswith("_") or name in ("gi_frame", "tb_frame", "f_back", "mro"):
                raise AttributeError(name)
            return builtins.getattr(ob, name)

    aliases = _aliases([str, collections.UserString])
    bad = {p for p, value in _walk(aliases, Plain(), 1) if danger(value)}
    assert {
        "Annotated[str].format",
        "Annotated[str].format_map",
        "Generic(str)[int].format",
        "Annotated[UserString].format",
        "Generic(UserString)[int].format_map",
    } <= bad
