"""One compilation per annotation text for `typing.ForwardRef`, within a process.

On Python 3.11 every `typing.ForwardRef` compiles its text when it is made,
even when the same text was compiled a moment before. `pydantic_core`'s
schema types alone make about 1,070 of them at import, of only 276 texts
(`"bool"` 152 times, `"str"` 146, `"int"` 112), 28 ms of CPU in every
`roost` process on a slow machine.

`install()` (run by `bridge/__init__.py`, before pydantic is imported) gives
the `typing` module a `compile` of its own, which `ForwardRef.__init__` is the
only caller of: a call of exactly the form `ForwardRef` makes,
`compile(text, "<string>", "eval")`, is answered from a table of the code
objects made so far; any other form goes to the builtin unchanged. A code
object cannot be changed, so two forward references may share one. It is
compiled as `typing` compiles it: no `__future__` flags (`typing` has none,
and `dont_inherit` keeps this module's out). The table holds at most
`_MAX` texts, so texts made while running cannot grow it without end.
Later Python versions make forward references differently: nothing is
installed there. This module has no `from __future__` import, as `typing` has
none: a call passed on to the builtin inherits the flags of the code calling
it, here this module's.
"""

import builtins
import sys
import typing
from collections.abc import Callable
from types import CodeType
from typing import Any

_VERSIONS = ((3, 11),)
_MAX = 4_096  # texts kept; roost's start-up has about 280


def cached_compile(
    table: dict[str, CodeType], compile_: Callable[..., Any] = builtins.compile
) -> Callable[..., Any]:
    """A `compile` that answers `compile(text, "<string>", "eval")` from `table`."""

    def compile(*args: Any, **kw: Any) -> Any:
        if kw or len(args) != 3 or args[1:] != ("<string>", "eval") or type(args[0]) is not str:
            return compile_(*args, **kw)
        source = args[0]
        code = table.get(source)
        if code is None:
            code = compile_(source, "<string>", "eval", 0, True)  # no inherited __future__ flags
            if len(table) < _MAX:
                table[source] = code
        return code

    return compile


def install() -> bool:
    """Give `typing` the caching `compile`; False where it does not apply."""
    if sys.version_info[:2] not in _VERSIONS:
        return False
    if "compile" not in vars(typing):
        vars(typing)["compile"] = cached_compile({})
    return True
