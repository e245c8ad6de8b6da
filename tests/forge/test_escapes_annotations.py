"""The second stage of the attacker pass of session 32 (its first stage, the real
`type` out of library code handed the class `UserString`, is
tests/forge/test_escapes_library_self.py): the checked `dataclass` looked at the
annotation names, then the real `dataclass` iterated the same dict and asked
`isinstance(value, str)` of each value. `isinstance` reads the value's `__class__`;
a class made with the real `type` answered it with a property that swapped a later
key for one holding code, and the real `dataclass` exec'd it with the real
builtins.

Now the class gets a fresh copy of its annotations no tool holds, and a value whose
class answers attribute lookups with code of its own is refused
(forge.annotation_values). Also from that pass: the real `replace` reads an `InitVar`
with a default, unjudged, and `typing.final` wrote `__final__` on any object.
"""

from __future__ import annotations

import collections
import dataclasses
from pathlib import Path
from typing import Any, ClassVar, Optional

import pytest

from forge import checked_types
from forge.annotation_values import answers_lookups_itself
from forge.modules import build_proxies
from forge.runner import SandboxRunner

aio = pytest.mark.asyncio(loop_scope="module")

INJ = 'x"\n raise ValueError("ESCAPED " + str(__import__("os").getpid()))#'


def swapping_class(ann: dict[str, Any]) -> type:
    """A class whose instances' `__class__` swaps `b` for the injected key once."""
    done: list[int] = []

    def hook(self: object) -> type:
        if not done:
            done.append(1)
            del ann["b"]
            ann[INJ] = int
        return Trig

    Trig = type("Trig", (), {"__class__": property(hook)})
    return Trig


def test_a_value_whose_class_answers_class_itself_is_refused() -> None:
    ann: dict[str, Any] = {}
    trig = swapping_class(ann)
    ann["a"] = trig()
    ann["b"] = int
    target = type("C", (), {"__annotations__": ann})
    with pytest.raises(TypeError, match="answers attribute lookups with code of its own"):
        checked_types.dataclass(init=False, eq=False)(target)
    assert INJ not in ann  # the hook never ran


def test_a_python_getattribute_is_refused_too() -> None:
    seen: list[str] = []

    def getattribute(self: object, name: str) -> Any:
        seen.append(name)
        return object.__getattribute__(self, name)

    sly = type("Sly", (), {"__getattribute__": getattribute})
    target = type("C", (), {"__annotations__": {"a": sly()}})
    with pytest.raises(TypeError, match="answers attribute lookups"):
        checked_types.dataclass(target)
    assert seen == []


def test_the_real_dataclass_reads_a_copy_the_caller_does_not_hold() -> None:
    ann: dict[str, Any] = {"a": int}
    target = type("C", (), {"__annotations__": ann})
    made = checked_types.dataclass(target)
    assert vars(made)["__annotations__"] is not ann
    ann[INJ] = int  # too late, and on a dict nobody reads
    assert [f.name for f in dataclasses.fields(made)] == ["a"]


def test_everyday_annotations_pass_unchanged() -> None:
    class Tool:
        pass

    @checked_types.dataclass
    class Job:
        name: str
        tags: list[str]
        owner: Optional[Tool] = None  # noqa: UP045 (the typing form on purpose)
        count: "int" = 0  # noqa: UP037 (a string annotation on purpose)
        seen: ClassVar[int] = 0
        scale: dataclasses.InitVar[int] = 1  # type: ignore[assignment]

    assert Job("tea", ["x"]).count == 0  # type: ignore[call-arg]
    kinds = [int, str, list[int], Optional[str], ClassVar[int], "int", Tool, None]  # noqa: UP045
    assert not any(answers_lookups_itself(k) for k in kinds)


def test_replace_judges_an_initvar_it_reads() -> None:
    @dataclasses.dataclass
    class D:
        x: int
        iv: dataclasses.InitVar[Any] = 0

    class K(D):
        iv = staticmethod(collections.UserList.copy)  # a library function, read by `replace`

    with pytest.raises(TypeError, match="library function"):
        checked_types.replace(K(1))
    assert checked_types.replace(D(1), x=2).x == 2


def test_final_writes_nothing() -> None:
    proxies = build_proxies()
    final = proxies["typing"].final
    assert final is checked_types.final
    json_proxy = proxies["json"]
    assert final(json_proxy) is json_proxy
    assert "__final__" not in vars(json_proxy)
    assert "__final__" not in vars(collections.UserDict)
    final(collections.UserDict)
    assert "__final__" not in vars(collections.UserDict)


# The attacker's whole tool, verbatim: the real `type` out of `TextWrapper.wrap`
# handed the class `UserString` (stage one), then the `__class__` swap inside the real
# `dataclass` (stage two). Either stage refused stops it.
ATTACKER_TOOL = """
from collections import UserString
from textwrap import TextWrapper
from dataclasses import dataclass

INJ = 'x"\\n raise ValueError("ESCAPED " + str(__import__("os").getpid()))#'
got = []
done = []
ann = {}

class D:
    def expandtabs(self, n):
        return int

class K:
    data = D()

class Grab:
    def split(self, text):
        got.append(text)
        return []

class W(TextWrapper):
    pass

def hook(self):
    if not done:
        done.append(1)
        del ann['b']
        ann[INJ] = int
    return got[1]

def run():
    \"\"\"Wraps text.\"\"\"
    w = W(tabsize=K, replace_whitespace=False)
    w.wordsep_re = Grab()
    w.wrap(UserString)
    T = got[0]
    got.append(T('Trig', (), {'__class__': property(hook)}))
    ann['a'] = got[1]()
    ann['b'] = int
    C = T('C', (), {'__annotations__': ann})
    try:
        dataclass(init=False, eq=False)(C)
    except ValueError as e:
        return str(e)
    return ['held type', repr(T)]
"""
EVERYDAY_TOOL = """
from dataclasses import dataclass, field, replace, InitVar
from typing import Optional, ClassVar, final

@final
class Item:
    label: str = 'x'

@dataclass
class Job:
    name: str
    tags: list = field(default_factory=list)
    owner: Optional[Item] = None
    total: ClassVar[int] = 0
    scale: InitVar[int] = 1

def run():
    \"\"\"Everyday dataclass use with typing annotations.\"\"\"
    job = replace(Job('tea', ['a']), name='cake')
    return [job.name, job.tags, job.owner is None]
"""


@aio
async def test_the_attackers_tool_is_refused(runner: SandboxRunner, tmp_path: Path) -> None:
    res = await runner.run(ATTACKER_TOOL, {}, tmp_path)
    assert "ESCAPED" not in str(res.result) + res.error_message, res
    assert not res.ok, res


@aio
async def test_everyday_dataclasses_in_the_sandbox(runner: SandboxRunner, tmp_path: Path) -> None:
    res = await runner.run(EVERYDAY_TOOL, {}, tmp_path)
    assert res.ok and res.result == ["cake", ["a"], True], res
