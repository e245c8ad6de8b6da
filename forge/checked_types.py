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
"""

from __future__ import annotations

import dataclasses
import keyword
import sys
import typing
from collections.abc import Callable, Iterable
from typing import Any


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
    """The class's own annotations, as `dataclasses` reads them."""
    own = getattr(cls, "__dict__", {})
    found = own.get("__annotations__", {}) if isinstance(own, typing.Mapping) else {}
    return found if isinstance(found, dict) else {}


def dataclass(cls: type | None = None, /, **options: Any) -> Any:
    """`dataclasses.dataclass`, with or without options, after `check_names`."""

    def wrap(target: type) -> type:
        check_names(_annotations(target), "dataclass")
        made: type = dataclasses.dataclass(**options)(target)
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

CHECKED: dict[tuple[str, str], Callable[..., Any]] = {
    ("dataclasses", "dataclass"): dataclass,
    ("typing", "TypedDict"): TypedDict,
}
