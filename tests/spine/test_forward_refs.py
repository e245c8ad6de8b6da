"""`typing.ForwardRef`'s compilation, once per text: equal references, other calls untouched."""

from __future__ import annotations

import marshal
import sys
import typing
from pathlib import Path
from typing import Any

import pytest

from bridge import forward_refs
from tests.fresh import env_without, python_c

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


def _counting(calls: list[str]) -> Any:
    def compile_(*args: Any, **kw: Any) -> Any:
        calls.append(args[0])
        return compile(*args, **kw)

    return compile_


@pytest.fixture
def bytecode_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Byte-code writing on, as `make test` runs (PYTHONDONTWRITEBYTECODE may be set here)."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


def test_the_texts_are_kept_in_a_file_the_next_process_reads(
    tmp_path: Path, bytecode_on: None
) -> None:
    texts = ["int", "str | None", "dict[str, list[int]]", "(*Ts,)[0]", "'quoted'"]
    path = tmp_path / "refs.marshal"
    first_calls: list[str] = []
    first = forward_refs._Kept(path)
    cached = forward_refs.cached_compile(first.entries, _counting(first_calls), first)
    codes = [cached(text, "<string>", "eval") for text in texts]
    first.save()
    assert first_calls == texts and path.read_bytes().startswith(forward_refs._HEADER)

    again_calls: list[str] = []
    again = forward_refs._Kept(path)
    assert all(type(v) is bytes for v in again.entries.values())  # decoded when asked for
    cached = forward_refs.cached_compile(again.entries, _counting(again_calls), again)
    assert [cached(text, "<string>", "eval") for text in texts] == codes
    assert codes == [_plain(text) for text in texts]
    assert again_calls == [] and again.added == 0
    assert cached("int", "<string>", "eval") is cached("int", "<string>", "eval")


def test_a_damaged_entry_or_file_is_compiled_again(tmp_path: Path, bytecode_on: None) -> None:
    path = tmp_path / "refs.marshal"
    path.write_bytes(
        forward_refs._HEADER + marshal.dumps({"int": b"\xffnot marshal", "str": marshal.dumps(1)})
    )
    calls: list[str] = []
    kept = forward_refs._Kept(path)
    cached = forward_refs.cached_compile(kept.entries, _counting(calls), kept)
    assert cached("int", "<string>", "eval") == _plain("int")
    assert cached("str", "<string>", "eval") == _plain("str")
    assert calls == ["int", "str"]
    kept.save()  # rewritten with the good codes
    assert forward_refs._Kept(path).entries.keys() == {"int", "str"}
    # atk2 s42 #3: a flipped bit that marshal answers with SystemError crashed every process
    flipped = bytes.fromhex(
        "630000000000000080000000000200000000000000f30c0000009700650064007a070000530029014e"
        "2901da03696e74a900f300000000fa043c66723efa083c6d6f64756c653e720500000001000000730e"
        "000000f003010101d800038064810a800a7203000000"
    )
    with pytest.raises(SystemError):
        marshal.loads(flipped)
    path.write_bytes(forward_refs._HEADER + marshal.dumps({"int | None": flipped}))
    kept = forward_refs._Kept(path)
    cached = forward_refs.cached_compile(kept.entries, _counting(calls), kept)
    assert cached("int | None", "<string>", "eval") == _plain("int | None")
    assert calls[-1] == "int | None"
    for content in (b"", b"garbage", b"roost-forward-refs 0|" + marshal.dumps({"int": b""})):
        path.write_bytes(content)
        assert forward_refs._Kept(path).entries == {}


def test_nothing_is_written_when_byte_code_writing_is_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    kept = forward_refs._Kept(tmp_path / "refs.marshal")
    forward_refs.cached_compile(kept.entries, kept=kept)("int", "<string>", "eval")
    kept.save()
    assert not (tmp_path / "refs.marshal").exists()


def test_past_its_bound_the_file_keeps_only_what_a_process_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bytecode_on: None
) -> None:
    monkeypatch.setattr(forward_refs, "_KEPT", 3)
    path = tmp_path / "refs.marshal"
    for texts in (["a", "b"], ["c", "d"]):  # two processes: 4 texts, over the bound
        kept = forward_refs._Kept(path)
        cached = forward_refs.cached_compile(kept.entries, kept=kept)
        for text in texts:
            cached(text, "<string>", "eval")
        kept.save()
    assert set(forward_refs._Kept(path).entries) == {"c", "d"}


def test_a_roost_process_compiles_no_text_the_file_holds(tmp_path: Path) -> None:
    """Two fresh interpreters in turn over one folder, pydantic's schema types imported."""
    script = (
        "import sys, typing; from pathlib import Path\n"
        "from bridge import forward_refs\n"
        "calls = []\n"
        "def counting(*args, **kw):\n"
        "    calls.append(args[0])\n"
        "    return compile(*args, **kw)\n"
        "kept = forward_refs._Kept(forward_refs.cache_path(Path(sys.argv[1]), 'forward-refs'))\n"
        "typing.compile = forward_refs.cached_compile(kept.entries, counting, kept)\n"
        "import pydantic_core.core_schema\n"
        "hints = pydantic_core.core_schema.IntSchema.__annotations__\n"
        "print(len(calls), hints['strict'].__forward_code__ == compile('bool', '<s>', 'eval'))\n"
        "kept.save()\n"
    )
    env = env_without("PYTHONDONTWRITEBYTECODE")
    runs = [python_c(script, str(tmp_path), env=env).stdout.split() for _ in range(2)]
    assert int(runs[0][0]) > 100 and runs[1] == ["0", "True"]
