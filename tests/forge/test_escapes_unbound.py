"""Library functions taken unbound (the attacker pass after the `register` one of
tests/forge/test_escapes_register.py): `UserList.copy(int)` ran
`int.__class__(int)` and handed the tool the real `type`; `ChainMap.new_child(K,
name)` made a class from any namespace (`type(name, *K.maps)`) and
`ChainMap.parents.fget(P)` gave any object's class, past `make_class`. With a
`Field` subclass and a `__get__` made that way, the real `dataclass` exec'd the
tool's text.

Now a plain library function reached by an attribute is refused unless a module
proxy offers it (forge.policy.guards `_library_api`): bound methods, the tool's
own functions and `json.dumps`-style module functions still pass. And the
checked `dataclass` refuses a descriptor as a field's default (it could answer
the check one thing and the real `dataclass` another).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from forge.runner import SandboxRunner

aio = pytest.mark.asyncio(loop_scope="module")
# a library function taken unbound, or (since the next pass) a library property
REFUSED = re.compile("library function outside its module|library property")

INJ = 'x"\n raise ValueError("ESCAPED " + str(__import__("os").getpid()))#'
TYPE_FROM_COPY = f"""
from collections import UserList
from dataclasses import dataclass, fields, MISSING

INJ = {INJ!r}

@dataclass
class B:
    x: int = 0

def run():
    \"\"\"UserList.copy(int) was the real type.\"\"\"
    T = UserList.copy(int)
    FieldCls = T(fields(B)[0])
    F = T('F', (FieldCls,), {{'name': property(lambda s: INJ, lambda s, v: None)}})
    evil = F(0, MISSING, True, True, None, True, None, MISSING)
    calls = []
    def get(self, inst, owner):
        calls.append(1)
        return 0 if len(calls) == 1 else evil
    H = T('H', (), {{'__get__': get}})
    try:
        @dataclass(init=False, eq=False)
        class D:
            y: int = H()
    except ValueError as e:
        return str(e)
    return ['held', len(calls)]
"""
CHAINMAP_ONLY = f"""
from collections import ChainMap
from dataclasses import dataclass, fields, MISSING

INJ = {INJ!r}

@dataclass
class B:
    x: int = 0

def run():
    \"\"\"ChainMap's unbound methods made the classes.\"\"\"
    class P:
        maps = [0, fields(B)[0]]
    field_cls = ChainMap.parents.fget(P)
    class K:
        maps = [(field_cls,), {{'name': property(lambda s: INJ, lambda s, v: None)}}]
    F = ChainMap.new_child(K, 'F')
    return ['ESCAPED', str(F)]
"""
UNBOUND = {
    "UserList.copy": "from collections import UserList\nf = UserList.copy",
    "Counter.copy": "from collections import Counter\nf = Counter.copy",
    "ChainMap.new_child": "from collections import ChainMap\nf = ChainMap.new_child",
    "a property's fget": "from collections import ChainMap\nf = ChainMap.parents.fget",
    "typing alias": "from typing import MutableMapping\nf = MutableMapping.update",
}
STILL_FINE = """
import json
import textwrap
from collections import Counter, ChainMap
from dataclasses import dataclass, asdict

@dataclass
class Row:
    name: str
    n: int = 0

    def label(self) -> str:
        return self.name.upper()

def run() -> list:
    \"\"\"Bound methods, module functions and the tool's own methods.\"\"\"
    counts = Counter("abca")
    scoped = ChainMap({"a": 1}).new_child({"b": 2})
    unbound_own = Row.label
    return [counts.most_common(1), dict(scoped), json.dumps(asdict(Row("x"))),
            textwrap.dedent("  hi"), unbound_own(Row("y"))]
"""


@aio
@pytest.mark.parametrize("source", [TYPE_FROM_COPY, CHAINMAP_ONLY], ids=["copy", "chainmap"])
async def test_the_attackers_tools_are_refused(
    runner: SandboxRunner, tmp_path: Path, source: str
) -> None:
    res = await runner.run(source, {}, tmp_path)
    assert "ESCAPED" not in str(res.result) + res.error_message, res
    assert not res.ok and REFUSED.search(res.error_message), res


@aio
@pytest.mark.parametrize("body", UNBOUND.values(), ids=UNBOUND.keys())
async def test_library_functions_taken_unbound_are_refused(
    runner: SandboxRunner, tmp_path: Path, body: str
) -> None:
    head, line = body.split("\n", 1)
    source = f'{head}\n\ndef run():\n    """Unbound."""\n    {line}\n    return "held"\n'
    res = await runner.run(source, {}, tmp_path)
    assert not res.ok and REFUSED.search(res.error_message), res


@aio
async def test_bound_methods_module_functions_and_own_methods_pass(
    runner: SandboxRunner, tmp_path: Path
) -> None:
    res = await runner.run(STILL_FINE, {}, tmp_path)
    assert res.ok, res
    assert res.result == [[["a", 2]], {"b": 2, "a": 1}, '{"name": "x", "n": 0}', "hi", "Y"]
