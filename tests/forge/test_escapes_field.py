"""A `dataclasses.Field` whose `name` answers any text (an attacker pass after the
`TypedDict` one of tests/forge/test_escapes.py): the real `dataclass` pastes
`Field.name`, not the annotation key, into the source text it execs with the real
builtins, and takes a field's `Field` from `getattr(cls, key)` (the class or a
base) and a base dataclass's from its `__dataclass_fields__`. So:

- `Field` is not offered (the linter, then the import hook, refuse it);
- a tool class may not inherit from it (forge.policy.guards `make_class`);
- the tool's `dataclass` (forge.checked_types) refuses, before the real one runs,
  a value of a field's name that is a `Field` but not exactly one, and a base
  whose `__dataclass_fields__` is forged.

The first two run through the real sandbox; the layers behind them are shown by
restricted tool code run in this process, with the `Field` class or a ready-made
`Field` subclass handed to it as if it had leaked (only a `ValueError` would
"escape": the payload raises one).
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from forge import checked_types
from forge.layers import Layers
from forge.modules import ALLOWED, build_proxies
from forge.policy import globals as run_globals
from forge.policy.compile import compile_tool
from forge.runner import SandboxRunner
from tests.forge.helpers import tool
from tests.waits import HANG_S

aio = pytest.mark.asyncio(loop_scope="module")

EVIL = 'x"\n raise ValueError("ESCAPED " + str(__import__("os").getpid()))#'
IMPORTS = "from dataclasses import dataclass, field, Field, MISSING"
# the attacker's two tools, and the same through a generic alias of `Field`
SUBCLASS_DEFAULT = f"""
class F(Field):
    name = property(lambda self: {EVIL!r}, lambda self, v: None)
f = F(MISSING, MISSING, True, True, None, True, None, MISSING)
@dataclass(init=False, eq=False)
class C:
    x: int = f
return 1
"""
SUBCLASS_ON_BASE = f"""
class F(Field):
    name = property(lambda self: {EVIL!r}, lambda self, v: None)
class Base:
    x = F(MISSING, MISSING, True, True, None, True, None, MISSING)
@dataclass(init=False, eq=False)
class C(Base):
    x: int
return 1
"""
ALIAS_BASE = f"""
class F(Field[int]):
    name = property(lambda self: {EVIL!r}, lambda self, v: None)
@dataclass
class C:
    x: int = F(MISSING, MISSING, True, True, None, True, None, MISSING)
return 1
"""
ATTACKS = {"default": SUBCLASS_DEFAULT, "base": SUBCLASS_ON_BASE, "alias": ALIAS_BASE}


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def no_lint() -> AsyncIterator[SandboxRunner]:
    r = SandboxRunner(default_timeout_s=HANG_S, layers_for_tests=Layers(lint=False))
    await r.start()
    yield r
    await r.aclose()


def test_field_is_not_offered() -> None:
    assert "Field" not in ALLOWED["dataclasses"]
    assert "field" in ALLOWED["dataclasses"]
    assert not hasattr(build_proxies()["dataclasses"], "Field")


@aio
@pytest.mark.parametrize("name", sorted(ATTACKS))
async def test_the_linter_refuses_field(runner: SandboxRunner, workspace: Path, name: str) -> None:
    res = await runner.run(tool(ATTACKS[name], imports=IMPORTS), {}, workspace)
    assert not res.ok, res.result
    assert "ESCAPED" not in res.error_message, res.error_message
    assert res.error_kind == "lint", (res.error_kind, res.error_message)
    assert "dataclasses.Field is not available" in res.error_message


@aio
@pytest.mark.parametrize("name", sorted(ATTACKS))
async def test_without_the_linter_the_import_refuses_field(
    no_lint: SandboxRunner, workspace: Path, name: str
) -> None:
    res = await no_lint.run(tool(ATTACKS[name], imports=IMPORTS), {}, workspace)
    assert not res.ok, res.result
    assert "ESCAPED" not in res.error_message, res.error_message
    assert res.error_kind == "runtime", (res.error_kind, res.error_message)
    assert "Field" in res.error_message


@aio
async def test_legitimate_dataclasses_still_work(runner: SandboxRunner, workspace: Path) -> None:
    body = """
@dataclass
class Point:
    x: int
    y: int = 2
    tags: list = field(default_factory=list)
@dataclass
class Point3(Point):
    z: int = field(default=0, repr=False)
@dataclass(frozen=True, order=True)
class Pair:
    a: int
    b: str = field(default='b', compare=False)
@dataclass(frozen=True, order=True)
class Triple(Pair):
    c: int = 3
class Plain:
    y: int = 7
@dataclass
class FromPlain(Plain):
    y: int
@dataclass
class Later:
    a: int
    init_only: InitVar[int] = 0
    rest: KW_ONLY
    b: int = 1
    def __init__(self, a, init_only=0, b=1):
        self.a = a + init_only
        self.b = b
p = Point3(1)
p.tags.append('t')
try:
    Pair(1).a = 5
    frozen = False
except FrozenInstanceError:
    frozen = True
return [repr(p), [f.name for f in fields(Point3)], Point(1) == Point(1, 2),
        Pair(1, 'q') < Pair(2, 'a'), Pair(1, 'q') == Pair(1, 'r'), frozen,
        repr(Triple(1)), FromPlain(5).y, Later(1, 2, b=3).a, is_dataclass(p),
        repr(replace(p, x=9)), asdict(Pair(4))]
"""
    imports = (
        "from dataclasses import dataclass, field, fields, replace, asdict, is_dataclass,"
        " InitVar, KW_ONLY, FrozenInstanceError"
    )
    res = await runner.run(tool(body, imports=imports), {}, workspace)
    assert res.ok, res.error_message
    assert res.result == [
        "run.<locals>.Point3(x=1, y=2, tags=['t'])",
        ["x", "y", "tags", "z"],
        True,
        True,
        True,
        True,
        "run.<locals>.Triple(a=1, b='b', c=3)",
        5,
        3,
        True,
        "run.<locals>.Point3(x=9, y=2, tags=['t'])",
        {"a": 4, "b": "b"},
    ]


# --- the layers behind: restricted tool code in this process, as if `Field` leaked


class _NameAnswersAnything(dataclasses.Field[Any]):
    """What a tool made of `Field` before: `name` answers the payload."""

    name = property(lambda self: EVIL, lambda self, v: None)


def _evil_field() -> Any:
    m: Any = dataclasses.MISSING
    none: Any = None
    return _NameAnswersAnything(m, m, True, True, none, True, none, m)


def _named(name: str) -> dataclasses.Field[Any]:
    f: dataclasses.Field[Any] = dataclasses.field()
    f.name = name
    return f


def _forged(fields: Any) -> type:
    """A class whose `__dataclass_fields__` are `fields`, never made by `dataclass`."""
    return type("Forged", (), {"__dataclass_fields__": fields, "__dataclass_params__": None})


def _run_restricted(body: str, imports: str, **leaked: Any) -> Any:
    """Run tool code with the real restricted compile and guards, in this process,
    with `leaked` added to the `dataclasses` module the tool imports."""
    proxies = build_proxies()
    proxies["dataclasses"] = types.SimpleNamespace(**vars(proxies["dataclasses"]), **leaked)
    glb = run_globals.prepare_globals(
        run_globals.safe_builtins(), proxies, run_globals.PrintSink(10_000)
    )
    exec(compile_tool(tool(body, imports=imports)), glb)
    run: Callable[[], Any] = glb["run"]
    return run()


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_make_class_refuses_a_field_base(name: str) -> None:
    with pytest.raises(TypeError, match=r"tools may not subclass dataclasses\.Field"):
        _run_restricted(ATTACKS[name], IMPORTS, Field=dataclasses.Field)


@pytest.mark.parametrize(
    "body",
    [
        "class Mine:\n    pass\nclass F(Mine, Field):\n    pass",
        "class F(Field):\n    pass",
        "class I(InitVar):\n    pass",
    ],
)
def test_make_class_refuses_every_marker_base(body: str) -> None:
    with pytest.raises(TypeError, match="tools may not subclass dataclasses"):
        _run_restricted(
            body + "\nreturn 1",
            "from dataclasses import Field, InitVar",
            Field=dataclasses.Field,
        )


@pytest.mark.parametrize(
    "body",
    [
        # the attacker's default, and the same on a base class, on a tool base
        # dataclass and behind a classmethod-wrapped property (run on each lookup)
        "@dataclass(init=False, eq=False)\nclass C:\n    x: int = evil",
        "class Base:\n    x = evil\n@dataclass(init=False, eq=False)\nclass C(Base):\n    x: int",
        "class Base:\n    y = evil\n@dataclass\nclass C(Base):\n    x: int = 1",
        "@dataclass\nclass B:\n    y: int = 0\nclass M(B):\n    x = evil\n"
        "@dataclass\nclass C(M):\n    x: int",
        "class C:\n    x: int\n    x = classmethod(property(lambda cls: evil))\ndataclass(C)",
    ],
)
def test_checked_dataclass_refuses_a_field_subclass_however_found(body: str) -> None:
    imports = "from dataclasses import dataclass, evil"
    # (a descriptor is refused as a default before its value is asked: it could answer
    # this check one thing and the real `dataclass` another)
    with pytest.raises(TypeError, match=r"not a dataclasses\.Field|is a descriptor"):
        _run_restricted(body + "\nreturn 1", imports, evil=_evil_field())


@pytest.mark.parametrize(
    "fields",
    [
        {"x": _evil_field()},  # a Field subclass
        {"x": _named(EVIL)},  # an exact Field named by the payload
        {"y": _named("x")},  # named other than its key
        {EVIL: _named(EVIL)},  # a key that is no identifier
        {"x": _named("x"), "y": "not a field"},
    ],
)
def test_checked_dataclass_refuses_forged_base_fields(fields: dict[str, Any]) -> None:
    base = _forged(fields)
    body = "class C(Base):\n    z: int = 0\ndataclass(C)\nreturn 1"
    with pytest.raises(TypeError, match="dataclass: "):
        _run_restricted(body, "from dataclasses import dataclass, Base", Base=base)


def test_checked_dataclass_refuses_forged_base_fields_of_another_type() -> None:
    class NotADict(dict[str, Any]):
        pass

    @checked_types.dataclass
    class Fine:
        x: int = 0

    with pytest.raises(TypeError, match="forged dataclass fields"):
        checked_types.dataclass(type("C", (_forged(NotADict(x=_named("x"))),), {}))
    assert repr(checked_types.dataclass(type("D", (Fine,), {}))()) == "D(x=0)"


def test_checked_dataclass_passes_real_fields() -> None:
    body = """
@dataclass
class A:
    x: int = field(default=1, metadata={'k': 1})
    xs: list = field(default_factory=list)
@dataclass(frozen=True)
class F:
    a: int = 0
@dataclass(frozen=True)
class G(F):
    b: int = 2
class H(A):
    pass
@dataclass
class K(H):
    y: int = 3
return [repr(A()), repr(G()), repr(K(5, [1], 6))]
"""
    out = _run_restricted(body, "from dataclasses import dataclass, field")
    assert out == [
        "run.<locals>.A(x=1, xs=[])",
        "run.<locals>.G(a=0, b=2)",
        "run.<locals>.K(x=5, xs=[1], y=6)",
    ]
