"""What the checked `dataclass` may be given and what it hands back (the attacker
pass atk6 on forge.checked_types):

- F1: the real `dataclass` takes a field's default from `getattr(cls, name)`, which
  also finds the METACLASS's attributes: a field `register` on a `UserDict` subclass
  got the bound `ABCMeta.register` (refused by identity everywhere else) as its
  default, and `astuple` handed it to the tool, which registered any class as a
  `UserDict`. Now a field the metaclass answers is refused, and what `asdict`,
  `astuple` and `replace` read is judged by the verdict's rules (forge.refused
  `why_refused`), bound methods included.
- F2: for a class without a docstring the real `dataclass` formats
  `inspect.signature(cls)`, calling `repr()` of every annotation value: tool code ran
  inside the real `dataclass`. Now forge gives such a class its docstring first.
- F3: `dataclass(UserDict)` made every two `UserDict`s equal, and
  `dataclass(frozen=True)(Counter)` froze every `Counter`: now only a class the
  tool's own class statements made is taken (forge.tool_classes), before anything
  is written.

The attacker's tools run through the real sandbox.
"""

from __future__ import annotations

import abc
import dataclasses
from collections import UserDict
from pathlib import Path
from typing import Any

import pytest

from forge import checked_types
from forge.runner import SandboxRunner

aio = pytest.mark.asyncio(loop_scope="module")

REGISTER_FIELD = '''
from dataclasses import dataclass, astuple
from collections import UserDict

class C(UserDict):
    register: int

class X:
    pass

def run():
    """register through a metaclass-resolved dataclass default."""
    D = dataclass(C)
    reg = astuple(D())[0]
    reg(X)
    return [repr(reg), isinstance(X(), UserDict), issubclass(X, UserDict)]
'''
MRO_FIELD = '''
from dataclasses import dataclass

class C:
    mro: int

def run():
    """type.mro as a default."""
    dataclass(C)
    return 'made'
'''
REPR_HOOK = '''
from dataclasses import dataclass
from collections import Counter
seen = []

class Hook(Counter):
    def most_common(self, n=None):
        seen.append('tool code ran inside the real dataclass')
        return []

class C:
    a: Hook(x=1)

def run():
    """Hook."""
    D = dataclass(C)
    return [seen, repr(D(1))]
'''
LIBRARY_TARGETS = '''
from dataclasses import dataclass, is_dataclass
from collections import UserDict, Counter
from typing import Generic
from string import Template
from json import JSONEncoder
out = []

def t(fn):
    try:
        out.append('made ' + repr(fn()))
    except TypeError as e:
        out.append(str(e))

def run():
    """dataclass applied to library classes."""
    t(lambda: dataclass(UserDict))
    t(lambda: dataclass(Generic))
    t(lambda: dataclass(frozen=True)(Counter))
    t(lambda: dataclass(Template))
    t(lambda: dataclass(JSONEncoder))
    c = Counter()
    c.total_seen = 1
    out.append(UserDict(a=1) == UserDict(b=2))
    out.append(is_dataclass(UserDict))
    return out
'''
EVERYDAY = '''
from dataclasses import dataclass, field, asdict, astuple, replace, fields
from collections import UserDict, Counter

@dataclass
class Point:
    x: int
    y: int = 0

@dataclass(order=True)
class Point3(Point):
    z: int = 0

@dataclass
class Bag(UserDict):
    label: str = 'bag'

class Tally(Counter):
    pass

@dataclass
class Scored(Tally):
    best: int = 0

@dataclass(slots=True)
class Slim:
    a: int
    tags: list = field(default_factory=list)

@dataclass
class Slimmer(Slim):
    b: int = 2

@dataclass
class Named:
    """A named thing."""
    register: int = 0
    mro: str = 'm'

def run():
    """Everyday dataclasses."""
    p = Point3(1, 2, 3)
    b = Bag(label='b')
    s = Scored(best=3)
    s.update('aab')
    return [
        repr(Point(1)), repr(p), p < Point3(1, 2, 4), asdict(p), astuple(p),
        repr(replace(p, z=9)), [f.name for f in fields(Point3)],
        repr(b), b.label, b == Bag(label='c'), s['a'], s.best,
        repr(Slim(1)), repr(Slimmer(1)), astuple(Named()),
    ]
'''


@aio
async def test_a_field_the_metaclass_answers_is_refused(
    runner: SandboxRunner, tmp_path: Path
) -> None:
    res = await runner.run(REGISTER_FIELD, {}, tmp_path)
    assert not res.ok, res
    assert "field 'register' has no default of its own" in res.error_message, res
    assert "metaclass ABCMeta answers that name" in res.error_message, res
    res = await runner.run(MRO_FIELD, {}, tmp_path)
    assert not res.ok and "metaclass type answers that name" in res.error_message, res


def test_asdict_astuple_and_replace_refuse_a_bound_register() -> None:
    """Behind the field check: what the helpers read is judged by the verdict's rules,
    bound methods included (a bound `ABCMeta.register` of any class)."""

    @dataclasses.dataclass
    class Box:
        v: Any

    box = Box(abc.ABCMeta.register.__get__(UserDict))
    for helper in (checked_types.asdict, checked_types.astuple, checked_types.replace):
        with pytest.raises(TypeError, match=r"ABCMeta\.register"):
            helper(box)
    assert checked_types.astuple(Box([1].append))[0].__self__ == [1]  # other methods pass


@aio
async def test_no_tool_code_runs_inside_the_real_dataclass(
    runner: SandboxRunner, tmp_path: Path
) -> None:
    res = await runner.run(REPR_HOOK, {}, tmp_path)
    assert res.ok and res.result == [[], "C(a=1)"], res


def test_a_class_without_a_docstring_gets_a_readable_one() -> None:
    @checked_types.dataclass
    class Base:
        a: int
        hidden: int = dataclasses.field(default=0, init=False)

    @checked_types.dataclass
    class Child(Base):
        b: str = "x"

    @checked_types.dataclass
    class Documented:
        """Mine."""

        c: int = 0

    assert Base.__doc__ == "Base(a)"
    assert Child.__doc__ == "Child(a, b)"
    assert Documented.__doc__ == "Mine."


@aio
async def test_library_classes_are_not_taken(runner: SandboxRunner, tmp_path: Path) -> None:
    res = await runner.run(LIBRARY_TARGETS, {}, tmp_path)
    assert res.ok, res
    only = "dataclass: only a class the tool defines can be made a dataclass, not "
    assert res.result == [
        only + "collections.UserDict",
        only + "typing.Generic",
        only + "collections.Counter",
        only + "forge.checked_text.Template",
        only + "json.encoder.JSONEncoder",
        False,  # two UserDicts with other contents still differ
        False,
    ], res


@aio
async def test_everyday_dataclasses_still_work(runner: SandboxRunner, tmp_path: Path) -> None:
    res = await runner.run(EVERYDAY, {}, tmp_path)
    assert res.ok, res
    assert res.result == [
        "Point(x=1, y=0)",
        "Point3(x=1, y=2, z=3)",
        True,
        {"x": 1, "y": 2, "z": 3},
        [1, 2, 3],
        "Point3(x=1, y=2, z=9)",
        ["x", "y", "z"],
        "Bag(label='b')",
        "b",
        False,
        2,
        3,
        "Slim(a=1, tags=[])",
        "Slimmer(a=1, tags=[], b=2)",
        [0, "m"],
    ], res
