"""Values library code reads for a tool (the attacker pass after the unbound one of
tests/forge/test_escapes_unbound.py): `asdict`/`astuple` returned a field default a
dataclass inherited from `UserList` (the real `UserList.copy`, whose call on `int`
is the real `type`), and `replace` read a class-level `classmethod` wrapping the
library property `ChainMap.parents` (`type(*maps[1:])`: the real `type`, or a class
made from any namespace). With `type`, a metaclass whose `__dict__` answered the
real `dataclass` other annotations than the checked ones: its text exec'd.

Now a field's value is judged before forge's `asdict`, `astuple` and `replace` hand
it on or use it (no library function, no metaclass, nothing the verdict refuses), a
field default may be a function only if the tool wrote it, a library property is
refused as an attribute, and the checked `dataclass` takes only classes of known
metaclasses. The attacker's tools run through the real sandbox.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from forge.runner import SandboxRunner

aio = pytest.mark.asyncio(loop_scope="module")

INJ = 'x"\n raise ValueError("ESCAPED " + str(__import__("os").getpid()))#'
STAGE_TWO = f"""
    M = T('M', (T,), {{'__dict__': property(lambda c: {{'__annotations__': {{{INJ!r}: int}}}})}})
    try:
        dataclass(init=False, eq=False)(M('C', (), {{}}))
    except ValueError as e:
        return str(e)
    return ['ESCAPED', str(T)]
"""
THROUGH_ASDICT = (
    """
from collections import UserList
from dataclasses import dataclass, asdict

@dataclass
class D(UserList):
    copy: int

def run():
    \"\"\"A library function out of a field default.\"\"\"
    cp = asdict(D())['copy']
    T = cp(int)
"""
    + STAGE_TWO
)
THROUGH_ASTUPLE = THROUGH_ASDICT.replace("asdict(D())['copy']", "astuple(D())[0]").replace(
    "import dataclass, asdict", "import dataclass, astuple"
)
THROUGH_REPLACE = (
    """
from collections import ChainMap
from dataclasses import dataclass, replace
got = []

@dataclass(init=False)
class B:
    p: int

class K(B):
    maps = [0, B]
    p = classmethod(ChainMap.parents)
    def __init__(self, p=None):
        got.append(p)

def run():
    \"\"\"The real type out of a class-level descriptor.\"\"\"
    replace(K())
    T = got[-1]
"""
    + STAGE_TWO
)
CLASSES_FROM_PARENTS = """
from collections import ChainMap

def hook(cls):
    return None

class K:
    maps = [0, 'X', (), {'__init_subclass__': classmethod(hook), 'answer': 42}]
    p = classmethod(ChainMap.parents)

def run():
    \"\"\"A class from any namespace.\"\"\"
    X = K.p
    return ['ESCAPED', str(X), X.answer]
"""
TOOLS = {
    "asdict": (THROUGH_ASDICT, "library function"),
    "astuple": (THROUGH_ASTUPLE, "library function"),
    "replace": (THROUGH_REPLACE, "library property"),
    "ChainMap.parents": (CLASSES_FROM_PARENTS, "library property"),
}
OWN_VALUES = """
from dataclasses import dataclass, asdict, astuple, replace

def double(n):
    return 2 * n

@dataclass
class Job:
    name: str
    step: int = double

    @property
    def shout(self) -> str:
        return self.name.upper()

def run() -> list:
    \"\"\"A tool's own function as a field, and its own property.\"\"\"
    job = replace(Job("tea"), name="cake")
    return [asdict(job)["step"](4), astuple(job)[0], job.shout]
"""


@aio
@pytest.mark.parametrize(("source", "refusal"), TOOLS.values(), ids=TOOLS.keys())
async def test_the_attackers_tools_are_refused(
    runner: SandboxRunner, tmp_path: Path, source: str, refusal: str
) -> None:
    res = await runner.run(source, {}, tmp_path)
    assert "ESCAPED" not in str(res.result) + res.error_message, res
    assert not res.ok and refusal in res.error_message, res


@aio
async def test_a_tools_own_functions_and_properties_still_work(
    runner: SandboxRunner, tmp_path: Path
) -> None:
    res = await runner.run(OWN_VALUES, {}, tmp_path)
    assert res.ok and res.result == [8, "cake", "CAKE"], res


CACHED = {
    "cache of a library class": "from functools import cache\nfrom collections import ChainMap\n"
    'def run():\n    """x"""\n    return repr(cache(ChainMap).fromkeys)\n',
    "lru_cache of a library class": "from functools import lru_cache\nfrom collections import "
    'ChainMap\ndef run():\n    """x"""\n    return repr(lru_cache(maxsize=4)(ChainMap))\n',
}
OWN_CACHED = """
from functools import cache, lru_cache

@cache
def square(n):
    return n * n

@lru_cache
def cube(n):
    return n * n * n

@lru_cache(maxsize=8)
def inc(n):
    return n + 1

def run() -> list:
    \"\"\"The tool's own functions cached.\"\"\"
    return [square(3), square(3), cube(2), inc(1), square.cache_info().hits]
"""


@aio
@pytest.mark.parametrize("source", CACHED.values(), ids=CACHED.keys())
async def test_only_a_tools_own_function_is_cached(
    runner: SandboxRunner, tmp_path: Path, source: str
) -> None:
    """`cache`/`lru_cache` copy the wrapped object's `__dict__` onto the wrapper,
    read there without descriptor binding (a raw classmethod, an `enum.property`)."""
    res = await runner.run(source, {}, tmp_path)
    assert not res.ok and "only a function the tool wrote can be cached" in res.error_message
    res = await runner.run(OWN_CACHED, {}, tmp_path)
    assert res.ok and res.result == [9, 9, 8, 2, 1], res
