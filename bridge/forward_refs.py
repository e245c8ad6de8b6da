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

The table is also kept across processes, like `.pyc` files (about 3 ms of CPU
a process for `roost send /help`'s 270 texts, against 0.4 to decode them):
`__pycache__/forward-refs.<cache tag>.marshal` beside `bridge/dataclass_code.py`'s
file, written at exit by a process that compiled a text the file lacked
(`bridge.dataclass_code.KeptEntries`: merged with what other processes wrote,
nothing written when byte-code writing is off or the folder is not writable).
Each code is marshalled on its own and decoded when its text is first asked
for; a code that does not load is compiled again. The file is tied to the
interpreter's magic number and has the trust of the `.pyc` files beside it.
It keeps at most `_KEPT` texts: past that, a process writes only the texts it
used (the annotations of tests and scripts do not fill it for good).
"""

import atexit
import builtins
import importlib.util
import marshal
import sys
import typing
from collections.abc import Callable, MutableMapping
from pathlib import Path
from types import CodeType
from typing import Any

from bridge.dataclass_code import KeptEntries, cache_path, decoded_code

_VERSIONS = ((3, 11),)
_MAX = 4_096  # texts kept in a process; roost's start-up has about 280 (`serve` 300)
_KEPT = 1_024  # texts kept in the file
_HEADER = b"roost-forward-refs 1|" + importlib.util.MAGIC_NUMBER + b"\n"


class _Kept(KeptEntries):
    """The compiled texts kept in the file (text -> code, each marshalled on its own)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, _HEADER, _KEPT)

    def stored(self, value: Any) -> Any:
        return value if isinstance(value, bytes) else marshal.dumps(value)


def cached_compile(
    table: MutableMapping[str, Any],
    compile_: Callable[..., Any] = builtins.compile,
    kept: KeptEntries | None = None,
) -> Callable[..., Any]:
    """A `compile` that answers `compile(text, "<string>", "eval")` from `table` (text ->
    code, or the code marshalled: decoded when asked for). With `kept` (whose `entries`
    `table` is), the texts asked for and the number compiled are counted for its file."""

    def compile(*args: Any, **kw: Any) -> Any:
        if kw or len(args) != 3 or args[1:] != ("<string>", "eval") or type(args[0]) is not str:
            return compile_(*args, **kw)
        source = args[0]
        code = table.get(source)
        if type(code) is not CodeType:  # marshalled (a file's), or not there
            code = decoded_code(code) if type(code) is bytes else None
            if code is not None:
                table[source] = code
            else:
                table.pop(source, None)  # a damaged entry: compiled again
                code = compile_(source, "<string>", "eval", 0, True)  # no __future__ flags
                if len(table) >= _MAX:
                    return code
                table[source] = code
                if kept is not None:
                    kept.added += 1
        if kept is not None:
            kept.used.add(source)
        return code

    return compile


def install(folder: Path | None = None) -> bool:
    """Give `typing` the caching `compile`, over the file in `folder` (by default
    `bridge/__pycache__`); False where it does not apply."""
    if sys.version_info[:2] not in _VERSIONS:
        return False
    if "compile" not in vars(typing):
        kept = _Kept(cache_path(folder, "forward-refs"))
        vars(typing)["compile"] = cached_compile(kept.entries, kept=kept)
        atexit.register(kept.save)
    return True
