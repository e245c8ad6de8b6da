"""`typing.ForwardRef`'s compilation, once per text: equal references, other calls untouched."""

from __future__ import annotations

import sys
import typing
from typing import Any

import pytest

from bridge import forward_refs
from tests.fresh import python_c

pytestmark = pytest.mark.skipif(
    sys.version_info[:2] != (3, 11), reason="installed on Python 3.11 only"
)

TEXTS = ["int", "str | None", "dict[str, list[int]]", "Required[CoreSchema]", "*Ts", "'quoted'"]


def _plain(source: str) -> Any:
    """What `typing` gets from the builtin: compiled with no `__future__` flag."""
    return compile(source, "<string>", "eval", 0, True)


def test_a_text_is_compiled_once_and_its_code_is_the_builtins() -> None:
    calls: list[tuple[object, ...]] = []

    def counting(*args: Any, **kw: Any) -> Any:
        calls.append(args)
        return compile(*args, **kw)

    cached = forward_refs.cached_compile({}, counting)
    for _ in range(3):
        codes = [cached(text, "<string>", "eval") for text in ["int", "(*Ts,)[0]", "a.b[c]"]]
    assert len(calls) == 3  # one each, not nine
    assert codes == [_plain(text) for text in ["int", "(*Ts,)[0]", "a.b[c]"]]
    assert cached("int", "<string>", "eval") is codes[0]


def test_forward_references_made_with_it_equal_the_plain_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(vars(typing), "compile", raising=False)
    plain = [typing.ForwardRef(text) for text in TEXTS]
    monkeypatch.setitem(vars(typing), "compile", forward_refs.cached_compile({}))
    cached = [typing.ForwardRef(text) for text in TEXTS]
    assert cached == plain
    assert [hash(r) for r in cached] == [hash(r) for r in plain]
    assert [r.__forward_code__ for r in cached] == [r.__forward_code__ for r in plain]
    assert typing.ForwardRef("int")._evaluate({}, {}, frozenset()) is int


def test_a_bad_text_is_refused_as_before_and_never_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    table: dict[str, Any] = {}
    monkeypatch.setitem(vars(typing), "compile", forward_refs.cached_compile(table))
    with pytest.raises(SyntaxError, match=r"Forward reference must be an expression -- got '1 \+'"):
        typing.ForwardRef("1 +")
    assert table == {}


def test_any_other_call_goes_to_the_builtin_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    table: dict[str, Any] = {}
    cached = forward_refs.cached_compile(table)
    assert cached("x = 1", "f.py", "exec") == compile("x = 1", "f.py", "exec", 0, True)
    annotated = cached("x: int = 1", "f.py", "exec")  # no __future__ flag of this test's
    assert annotated == compile("x: int = 1", "f.py", "exec", 0, True)
    assert cached(b"1", "<string>", "eval") == compile(b"1", "<string>", "eval", 0, True)
    flagged = cached("x: int", "<string>", "exec", 0x1000000)  # a flag: not ForwardRef's form
    assert flagged == compile("x: int", "<string>", "exec", 0x1000000, True)
    assert table == {}
    with pytest.raises(TypeError):
        cached("1")  # the builtin's own complaint


def test_the_table_stops_growing_at_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forward_refs, "_MAX", 2)
    table: dict[str, Any] = {}
    cached = forward_refs.cached_compile(table)
    codes = [cached(f"x{i}", "<string>", "eval") for i in range(5)]
    assert [c.co_names for c in codes] == [(f"x{i}",) for i in range(5)]
    assert list(table) == ["x0", "x1"]


def test_roost_installs_it_before_pydantic_makes_its_schema_types() -> None:
    script = (
        "import sys, typing\n"
        "import bridge\n"
        "assert 'pydantic_core' not in sys.modules\n"
        "import pydantic_core.core_schema\n"
        "hints = pydantic_core.core_schema.IntSchema.__annotations__\n"
        "print(hints['le'].__forward_code__ is hints['ge'].__forward_code__,\n"
        "      hints['strict'].__forward_code__ is typing.ForwardRef('bool').__forward_code__)\n"
    )
    out = python_c(script).stdout.split()
    assert out == ["True", "True"]  # the schema type's reference compiled its text once
