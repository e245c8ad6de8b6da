"""A tool-made metaclass (the attacker pass after the `Field` one of
tests/forge/test_escapes_field.py): `typing.Type` as a base resolves to the real
`type` (its `__mro_entries__`), so `class Meta(Type)` was a metaclass, and calling
it made classes from any namespace, past `make_class`, the linter's and
RestrictedPython's name rules: `__annotations__` as a dict subclass whose `items()`
fed `dataclass` text of its choosing, a forged `__dataclass_fields__` and
`__class__` that turned `dataclasses.replace` into an unguarded `getattr`. Both
reached the real builtins with every layer on.

Now a tool class may not have `type` in its MRO (forge.policy.guards
NOT_SUBCLASSABLE, checked by `make_class` on the bases and on what it made), and
the checked `dataclass` takes only a plain dict of annotations. The attacker's
tools run through the real sandbox; the second layer is shown in this process
with a dict subclass handed to `dataclass` directly.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from forge import checked_types
from forge.runner import SandboxRunner

aio = pytest.mark.asyncio(loop_scope="module")

ESCAPED = 'ESCAPED " + str(__import__("os").getpid()) + "'
META_DATACLASS = f'''
from typing import Type
from dataclasses import dataclass

class Meta(Type):
    pass

class Ann(dict):
    def items(self):
        return [('x"\\n raise ValueError("{ESCAPED}")#', int)]

def run():
    """Escape through dataclass."""
    C = Meta('C', (), {{'__annotations__': Ann(x=int)}})
    try:
        dataclass(C, init=False, eq=False)
    except ValueError as e:
        return str(e)
    return 'held'
'''
META_REPLACE = """
from typing import Type
from dataclasses import replace

class Meta(Type):
    pass

def run():
    \"\"\"Escape through replace.\"\"\"
    Fake = Meta('Fake', (), {'init': True, 'name': '__getattribute__', '_field_type': None})
    Sink = Meta('Sink', (), {'__new__': staticmethod(lambda cls, **kw: kw)})
    M3 = Meta('M3', (Meta,), {'__dataclass_fields__': {'a': Fake()},
                              '__class__': property(lambda c: Sink)})
    C = M3('C', (), {})
    ga = replace(C)['__getattribute__']
    b = ga(replace, '__globals__')['__builtins__']
    return ['ESCAPED', b['__import__']('os').getpid()]
"""
META_ALIAS = """
from typing import Type

class Meta(Type[int]):
    pass

def run():
    \"\"\"A metaclass through a generic alias.\"\"\"
    C = Meta('C', (), {'__module__': 'os', '__eq__': lambda s, o: 'tool __eq__'})
    return ['ESCAPED', str(C), C() == 1]
"""
# a plain class using Type as an annotation still works
TYPE_ANNOTATION = """
from typing import Type

def run(n: int) -> str:
    \"\"\"Type only annotates.\"\"\"
    kind: Type[int] = int
    return str(kind(n) + 1)
"""


@aio
@pytest.mark.parametrize(
    "source", [META_DATACLASS, META_REPLACE, META_ALIAS], ids=["dataclass", "replace", "alias"]
)
async def test_a_tool_cannot_make_a_metaclass(
    runner: SandboxRunner, tmp_path: Path, source: str
) -> None:
    res = await runner.run(source, {}, tmp_path)
    assert "ESCAPED" not in str(res.result) + str(res.error_message), res
    assert not res.ok and res.error_kind == "runtime", res
    assert "tools may not subclass builtins.type" in str(res.error_message), res


@aio
async def test_type_as_an_annotation_still_works(runner: SandboxRunner, tmp_path: Path) -> None:
    res = await runner.run(TYPE_ANNOTATION, {"n": 41}, tmp_path)
    assert res.ok and res.result == "42", res


def test_the_checked_dataclass_takes_only_a_plain_dict_of_annotations() -> None:
    """Behind make_class: a class whose annotations are a dict subclass (only a
    metaclass could have made one) is refused before the real `dataclass` reads it."""

    class Ann(dict):  # type: ignore[type-arg]
        def items(self):  # type: ignore[no-untyped-def]
            return [('x"\n raise ValueError("ESCAPED")#', int)]

    made = type("C", (), {"__annotations__": Ann(x=int)})
    with pytest.raises(TypeError, match="annotations must be a plain dict"):
        checked_types.dataclass(made, init=False, eq=False)

    @checked_types.dataclass
    class Plain:
        x: int = 1

    assert dataclasses.fields(Plain)[0].name == "x" and Plain().x == 1
