"""`ABCMeta.register` as a way to make library objects writable (the attacker pass
after the `cached_property` one of tests/forge/test_escapes_attrname.py): the write
guard asked `isinstance(ob, WRITABLE_TYPES)`, and UserDict, UserList and ChainMap
are ABCs, so `UserDict.register(cached_property)` made a plain `cached_property`
writable and its `attrname` the tool's again. A `deque` (or a `partial`, a bound
method) around the instance then went round the checked `asdict`'s walk into
`deepcopy`: a `setattr` of any name, then the real `type`, then (through a
tool-made `__get__` renaming a base `Field` between the checked `dataclass`'s
check and the real one's use) `dataclass` exec'd the tool's text.

Now `register` is refused wherever it is reached (forge.policy.verdict), the
write guard reads the real MRO, and the tool's `asdict`/`astuple` make no
`deepcopy` at all (forge.checked_types). The tools run through the real sandbox.
"""

from __future__ import annotations

import abc
from collections import UserDict
from functools import cached_property
from pathlib import Path

import pytest

from forge.policy.guards import Guards, _DeniedWrite
from forge.runner import SandboxRunner

aio = pytest.mark.asyncio(loop_scope="module")

SETATTR_ANY = """
from functools import cached_property
from dataclasses import dataclass, asdict, fields
from collections import UserDict, deque

@dataclass
class Box:
    v: int

def setattr_any(target, name, value):
    def reducer(proto):
        return (lambda: target, (), (None, {name: value}))
    UserDict.register(cached_property)
    cp = cached_property(lambda self: reducer)
    class Holder:
        x = cp
    cp.attrname = '__reduce_ex__'
    h = Holder()
    h.x
    asdict(Box(deque([h])))
"""
TO_TYPE = (
    SETATTR_ANY
    + """
from typing import Sized

def run():
    \"\"\"Escape to type.\"\"\"
    seen = []
    class S(Sized):
        pass
    setattr_any(S, '__subclasshook__', lambda sub: seen.append(sub) or False)
    isinstance(int, S)
    return ['ESCAPED', str(seen[0])]
"""
)
TO_BUILTINS = (
    SETATTR_ANY
    + """
INJ = 'x"\\n raise ValueError("ESCAPED " + str(__import__("os").getpid()))#'

@dataclass
class B:
    x: int = 0

def run():
    \"\"\"Escape through a Field renamed between check and use.\"\"\"
    fb = fields(B)[0]
    calls = []
    def get(self, inst, owner):
        calls.append(1)
        if len(calls) == 2:
            setattr_any(fb, 'name', INJ)
        return 0
    class H:
        pass
    setattr_any(H, '__get__', get)
    try:
        @dataclass(init=False, eq=False)
        class D(B):
            y: int = H()
    except ValueError as e:
        return str(e)
    return ['held', len(calls)]
"""
)
REGISTERS = {
    "UserDict": "from collections import UserDict\nUserDict.register(int)",
    "ChainMap": "from collections import ChainMap\nChainMap.register(int)",
    "typing alias": "from typing import Sequence\nSequence.register(int)",
    "unbound": "from collections import UserList\nr = UserList.register\nr(int)",
}


@aio
@pytest.mark.parametrize("source", [TO_TYPE, TO_BUILTINS], ids=["type", "builtins"])
async def test_the_attackers_tools_are_refused(
    runner: SandboxRunner, tmp_path: Path, source: str
) -> None:
    res = await runner.run(source, {}, tmp_path)
    assert "ESCAPED" not in str(res.result) + res.error_message, res
    assert not res.ok and "ABCMeta.register" in res.error_message, res


@aio
@pytest.mark.parametrize("body", REGISTERS.values(), ids=REGISTERS.keys())
async def test_register_is_refused_wherever_it_is_reached(
    runner: SandboxRunner, tmp_path: Path, body: str
) -> None:
    head, call = body.split("\n", 1)
    source = (
        f'{head}\n\ndef run():\n    """Register."""\n'
        + "".join(f"    {line}\n" for line in call.splitlines())
        + "    return 'registered'\n"
    )
    res = await runner.run(source, {}, tmp_path)
    assert not res.ok and "ABCMeta.register" in res.error_message, res


def test_the_write_guard_reads_the_real_mro() -> None:
    """A class registered (by library code, here the test) with UserDict is no
    UserDict to the write guard; a real subclass still is."""

    class Registered:
        pass

    UserDict.register(Registered)
    assert isinstance(Registered(), UserDict)  # what the old check asked
    guards = Guards()
    assert isinstance(guards.write(Registered()), _DeniedWrite)
    assert isinstance(guards.write(cached_property(len)), _DeniedWrite)

    class Sub(UserDict):  # type: ignore[type-arg]
        pass

    made = Sub()
    assert guards.write(made) is made and guards.write({}) == {}
    assert abc.ABCMeta.register is type(UserDict).register
