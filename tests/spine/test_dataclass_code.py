"""The dataclass method cache: equal classes, a file that outlives the process, safe fallbacks."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import json
import marshal
import sys
from pathlib import Path
from types import CodeType
from typing import Any, ClassVar

import pytest

from bridge import dataclass_code
from tests.fresh import env_without, python_c

pytestmark = pytest.mark.skipif(
    sys.version_info[:2] != (3, 11), reason="the cache applies to Python 3.11 only"
)


def _classes() -> dict[str, Any]:
    """A spread of dataclass features, made fresh on each call."""

    @dataclasses.dataclass(frozen=True, slots=True)
    class Point:
        x: int
        y: int = 0
        tags: tuple[str, ...] = ()

    @dataclasses.dataclass(order=True)
    class Item:
        rank: int
        name: str = dataclasses.field(default="n", compare=False)
        seen: list[int] = dataclasses.field(default_factory=list)
        kind: ClassVar[str] = "item"

    @dataclasses.dataclass(kw_only=True)
    class Post:
        body: str
        length: int = dataclasses.field(init=False)
        scale: dataclasses.InitVar[int] = 1

        def __post_init__(self, scale: int) -> None:
            self.length = len(self.body) * scale

    @dataclasses.dataclass(unsafe_hash=True)
    class Key:
        a: str
        b: int = dataclasses.field(default=3, hash=False)

    return {"Point": Point, "Item": Item, "Post": Post, "Key": Key}


def _behaviour(c: dict[str, Any]) -> list[object]:
    p = c["Point"](1, tags=("a",))
    out: list[object] = [
        repr(p),
        p == c["Point"](1, 0, ("a",)),
        hash(p) == hash(c["Point"](1, 0, ("a",))),
    ]
    try:
        p.x = 5
    except dataclasses.FrozenInstanceError as e:
        out.append(type(e).__name__)
    out.append(hasattr(p, "__dict__"))
    i1, i2 = c["Item"](2, "b"), c["Item"](1, "z")
    out += [
        repr(i1),
        i1 > i2,
        sorted([i1, i2])[0].rank,
        i1 == c["Item"](2, "other"),
        c["Item"](1).seen is not c["Item"](1).seen,
    ]
    post = c["Post"](body="abc", scale=2)
    out += [repr(post), post.length]
    with pytest.raises(TypeError):
        c["Post"]("abc")
    k = c["Key"]("x", 1)
    out += [hash(k) == hash(c["Key"]("x", 9)), k == c["Key"]("x", 9)]
    out.append([f.name for f in dataclasses.fields(c["Item"])])
    out += [str(inspect.signature(c[name].__init__)) for name in ("Point", "Item", "Post", "Key")]
    out.append(c["Post"].__init__.__annotations__)
    return out


@pytest.fixture(autouse=True)
def bytecode_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Byte-code writing on, as `make test` runs (PYTHONDONTWRITEBYTECODE may be set here)."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


def test_classes_made_through_the_cache_behave_as_the_stdlib_makes_them(tmp_path: Path) -> None:
    cache = dataclass_code._Cache(tmp_path / "codes.marshal")
    cached_maker = dataclass_code._method_maker(cache)
    installed = vars(dataclasses)["_create_fn"]
    stdlib = _stdlib_create_fn()
    try:
        vars(dataclasses)["_create_fn"] = stdlib
        plain = _behaviour(_classes())
        vars(dataclasses)["_create_fn"] = cached_maker
        first = _behaviour(_classes())  # compiled and remembered
        compiled = cache.added
        again = _behaviour(_classes())  # every method from the cache
    finally:
        vars(dataclasses)["_create_fn"] = installed
    assert plain == first == again
    assert compiled > 10
    assert cache.added == compiled  # the second round compiled nothing


def _stdlib_create_fn() -> Any:
    """The stdlib's own `_create_fn`, from a fresh copy of the module."""
    spec = importlib.util.find_spec("dataclasses")
    assert spec is not None and spec.loader is not None
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    return fresh._create_fn


def test_the_cache_file_is_written_at_save_and_read_by_the_next_process(tmp_path: Path) -> None:
    target = tmp_path / "cache" / "codes.marshal"
    cache = dataclass_code._Cache(target)
    code = cache.code("def __create_fn__():\n def f(self):\n  return 1\n return f")
    cache.save()
    assert target.read_bytes().startswith(importlib.util.MAGIC_NUMBER)
    again = dataclass_code._Cache(target)
    assert list(again.codes) == list(cache.codes)
    assert (
        again.code("def __create_fn__():\n def f(self):\n  return 1\n return f").co_code
        == code.co_code
    )
    assert again.added == 0
    assert not list(target.parent.glob("*.tmp"))


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"garbage",
        b"\x00\x00\r\n" + marshal.dumps({"a": 1}),
        importlib.util.MAGIC_NUMBER + b"\xff\x00",
        importlib.util.MAGIC_NUMBER + marshal.dumps(["not", "a", "dict"]),
        importlib.util.MAGIC_NUMBER
        + marshal.dumps({"text": "not code", 3: compile("1", "<s>", "eval")}),
    ],
)
def test_a_damaged_or_foreign_file_is_ignored(tmp_path: Path, content: bytes) -> None:
    target = tmp_path / "codes.marshal"
    target.write_bytes(content)
    cache = dataclass_code._Cache(target)
    assert cache.codes == {}
    cache.code("def __create_fn__():\n def g(self):\n  return 2\n return g")
    cache.save()  # rewritten with what this process compiled
    assert len(dataclass_code._Cache(target).codes) == 1


def test_nothing_is_written_when_byte_code_writing_is_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    cache = dataclass_code._Cache(tmp_path / "codes.marshal")
    cache.code("def __create_fn__():\n def h(self):\n  return 3\n return h")
    cache.save()
    assert not (tmp_path / "codes.marshal").exists()


def test_an_unwritable_folder_costs_nothing_but_the_cache(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("x")
    cache = dataclass_code._Cache(blocked / "codes.marshal")
    cache.code("def __create_fn__():\n def k(self):\n  return 4\n return k")
    cache.save()  # no exception
    assert blocked.read_text() == "x"


def test_a_fresh_process_uses_the_file_and_makes_equal_classes(tmp_path: Path) -> None:
    """Two interpreters in turn, each installing the cache over one folder."""
    script = (
        "import sys; from pathlib import Path; import dataclasses\n"
        "from bridge import dataclass_code\n"
        "cache = dataclass_code._Cache(Path(sys.argv[1]) / 'codes.marshal')\n"
        "dataclasses._create_fn = dataclass_code._method_maker(cache)\n"
        "@dataclasses.dataclass(frozen=True)\n"
        "class P:\n    a: int\n    b: str = 'x'\n"
        "print(repr(P(1)), P(1) == P(1, 'x'), hash(P(2)) == hash(P(2)), cache.added)\n"
        "cache.save()\n"
    )
    env = env_without("PYTHONDONTWRITEBYTECODE")
    runs = [python_c(script, str(tmp_path), env=env).stdout.split() for _ in range(2)]
    assert runs[0][:4] == runs[1][:4] == ["P(a=1,", "b='x')", "True", "True"]
    assert int(runs[0][4]) > 0 and int(runs[1][4]) == 0


def test_the_cache_stops_growing_at_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dataclass_code, "_MAX", 3)
    cache = dataclass_code._Cache(tmp_path / "codes.marshal")
    for i in range(5):
        code = cache.code(f"def __create_fn__():\n def f{i}(self):\n  return {i}\n return f{i}")
        assert isinstance(code, CodeType)
    assert len(cache.codes) == cache.added == 3


def test_classes_of_tests_and_scripts_are_made_but_not_kept(tmp_path: Path) -> None:
    """The installed maker keeps roost's and libraries' classes only: a test's would grow
    the file every `roost` command reads."""
    roots = dataclass_code._shipped_roots()
    from bridge.core import config  # a roost module

    assert dataclass_code.shipped_module(vars(config), roots)
    assert dataclass_code.shipped_module(vars(dataclasses), roots)  # the standard library
    assert dataclass_code.shipped_module(vars(pytest), roots)  # an installed library
    assert not dataclass_code.shipped_module(globals(), roots)  # this test
    assert not dataclass_code.shipped_module({"__name__": "__main__"}, roots)  # python -c
    assert not dataclass_code.shipped_module(None, roots)

    cache = dataclass_code._Cache(tmp_path / "codes.marshal")
    maker = dataclass_code._method_maker(cache, lambda g: dataclass_code.shipped_module(g, roots))
    installed = vars(dataclasses)["_create_fn"]
    try:
        vars(dataclasses)["_create_fn"] = maker
        made = _behaviour(_classes())
    finally:
        vars(dataclasses)["_create_fn"] = installed
    assert made == _behaviour(_classes())
    assert cache.added == 0 and cache.codes == {}


def test_entries_are_decoded_only_when_a_class_asks_for_them(tmp_path: Path) -> None:
    target = tmp_path / "codes.marshal"
    texts = [
        f"def __create_fn__():\n def f{i}(self):\n  return {i}\n return f{i}" for i in range(3)
    ]
    first = dataclass_code._Cache(target)
    for text in texts:
        first.code(text)
    first.save()
    again = dataclass_code._Cache(target)
    assert all(isinstance(v, bytes) for v in again.codes.values())  # nothing decoded yet
    code = again.code(texts[1])
    assert code.co_consts == first.codes[texts[1]].co_consts  # type: ignore[union-attr]
    assert [type(again.codes[t]) for t in texts] == [bytes, CodeType, bytes]
    assert again.added == 0


def test_a_damaged_entry_is_compiled_again(tmp_path: Path) -> None:
    target = tmp_path / "codes.marshal"
    text = "def __create_fn__():\n def f(self):\n  return 7\n return f"
    target.write_bytes(importlib.util.MAGIC_NUMBER + marshal.dumps({text: b"\xffnot marshal"}))
    cache = dataclass_code._Cache(target)
    namespace: dict[str, Any] = {}
    exec(cache.code(text), {}, namespace)
    assert namespace["__create_fn__"]()(None) == 7


def test_a_file_of_the_former_layout_still_serves(tmp_path: Path) -> None:
    """Code objects marshalled in one dict, as the cache wrote them before."""
    target = tmp_path / "codes.marshal"
    text = "def __create_fn__():\n def f(self):\n  return 8\n return f"
    target.write_bytes(
        importlib.util.MAGIC_NUMBER + marshal.dumps({text: compile(text, "<s>", "exec")})
    )
    cache = dataclass_code._Cache(target)
    assert isinstance(cache.codes[text], CodeType)
    cache.code(text)
    assert cache.added == 0


def _docs(c: dict[str, Any]) -> dict[str, object]:
    """What a reader of the classes' docstrings sees, by class and by instance."""
    point = c["Point"](1)
    return {
        **{name: cls.__doc__ for name, cls in c.items()},
        "instance": point.__doc__,
        "getdoc": inspect.getdoc(c["Item"]),
        "documented": _documented().__doc__,
    }


def _documented() -> type:
    @dataclasses.dataclass
    class Documented:
        """Its own words."""

        a: int = 0

    return Documented


def test_a_roost_classs_docstring_is_worked_out_when_read_and_equals_the_stdlibs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    process = vars(dataclasses)["_process_class"]
    stdlib = process.__wrapped__
    monkeypatch.setattr(dataclasses, "_process_class", stdlib)
    eager = _docs(_classes())  # the stdlib works each one out as it makes the class

    asked: list[object] = []
    signature = inspect.signature
    monkeypatch.setattr(inspect, "signature", lambda *a, **k: asked.append(a) or signature(*a, **k))
    deferring = dataclass_code._lazy_doc_maker(stdlib, lambda cls: True)  # as for roost's own
    monkeypatch.setattr(dataclasses, "_process_class", deferring)
    made = _classes()
    assert asked == []  # making them worked out no docstring
    assert type(vars(made["Point"])["__doc__"]).__name__ == "_LazyDoc"
    assert _docs(made) == eager
    assert len(asked) == 4  # one per class, when read
    assert all(isinstance(vars(cls)["__doc__"], str) for cls in made.values())  # then kept
    _docs(made)
    assert len(asked) == 4


def test_a_class_that_cannot_be_made_keeps_its_docstring_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stdlib = vars(dataclasses)["_process_class"].__wrapped__
    monkeypatch.setattr(
        dataclasses, "_process_class", dataclass_code._lazy_doc_maker(stdlib, lambda cls: True)
    )

    class Broken:
        a: int = 0
        b: str  # a field without a default after one with: TypeError

    with pytest.raises(TypeError, match="non-default argument 'b'"):
        dataclasses.dataclass(Broken)
    assert vars(Broken)["__doc__"] is None


def test_only_roost_packages_classes_defer_their_docstring() -> None:
    from bridge.types.backend import ToolCallRequest

    assert dataclass_code.roost_module(ToolCallRequest)
    assert not dataclass_code.roost_module(inspect.Parameter)  # the stdlib's
    assert not dataclass_code.roost_module(_documented())  # this test's


def test_every_roost_dataclass_reads_the_docstring_the_stdlib_would_give_it() -> None:
    """All of `bridge` and `forge` imported twice: once as roost runs (docstrings worked out
    when read) and once with the stdlib's own class making; every docstring is equal."""
    script = (
        "import sys, dataclasses, importlib, pkgutil, json, re\n"
        "if sys.argv[1] == 'stdlib':\n"
        "    dataclasses._create_fn.__roost_cached__ = True  # install() then wraps nothing\n"
        "import bridge, forge\n"
        "for pkg in (bridge, forge):\n"
        "    for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "        if info.name.endswith('__main__'):\n"
        "            continue\n"
        "        try:\n"
        "            importlib.import_module(info.name)\n"
        "        except ImportError:\n"
        "            pass  # an optional extra's module\n"
        "docs = {}\n"
        "for name, module in list(sys.modules.items()):\n"
        "    if name.split('.')[0] not in ('bridge', 'forge'):\n"
        "        continue\n"
        "    for value in list(vars(module).values()):\n"
        "        if isinstance(value, type) and dataclasses.is_dataclass(value)"
        " and value.__module__ == name:\n"
        "            kind = type(vars(value).get('__doc__')).__name__\n"
        "            doc = re.sub(' at 0x[0-9a-f]+', '', value.__doc__)  # lambdas' addresses\n"
        "            docs[name + '.' + value.__qualname__] = [doc, kind]\n"
        "print(json.dumps(docs))\n"
    )
    runs = {how: json.loads(python_c(script, how).stdout) for how in ("stdlib", "roost")}
    stdlib, roost = runs["stdlib"], runs["roost"]
    assert len(stdlib) > 250 and stdlib.keys() == roost.keys()
    assert {name: doc for name, (doc, _) in roost.items()} == {
        name: doc for name, (doc, _) in stdlib.items()
    }
    deferred = [name for name, (_, kind) in roost.items() if kind == "_LazyDoc"]
    assert len(deferred) > 150  # not read yet when the script listed them
    assert not [name for name, (_, kind) in stdlib.items() if kind == "_LazyDoc"]
