"""`cached_property.attrname` as a way to write any attribute (the attacker pass
after the metaclass one of tests/forge/test_escapes_meta.py): a tool subclass of
`functools.cached_property` could set `attrname` to `__reduce_ex__`; the real
`cached_property` then stored the tool's function under that name in an
instance's dict; `asdict` deep-copied the instance, and `deepcopy` took
`__reduce_ex__` from it: a `setattr` of any name on any object. From there a
`__subclasshook__` handed the tool the real `type`, and `replace` became an
unguarded `getattr` to the real builtins, every layer on.

Now `cached_property` cannot be subclassed (forge.policy.guards NOT_SUBCLASSABLE),
and the tool's `asdict`, `astuple` and `replace` (forge.checked_types) refuse an
object graph holding an attribute no tool could set, and a dataclass whose fields
or class are forged. The attacker's tool runs through the real sandbox; the
second layer in this process, with such an instance made directly.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from functools import cached_property
from pathlib import Path

import pytest

from forge import checked_types
from forge.runner import SandboxRunner

aio = pytest.mark.asyncio(loop_scope="module")

SETATTR_ANY = """
from functools import cached_property
from dataclasses import dataclass, asdict, replace
from typing import Sized

class CP(cached_property):
    pass

@dataclass
class Box:
    v: int

def setattr_any(target, name, value):
    def reducer(proto):
        return (lambda: target, (), (None, {name: value}))
    cp = CP(lambda self: reducer)
    class Holder:
        x = cp
    cp.attrname = '__reduce_ex__'
    h = Holder()
    h.x
    asdict(Box(h))

def run():
    \"\"\"Escape.\"\"\"
    seen = []
    class S(Sized):
        pass
    setattr_any(S, '__subclasshook__', lambda sub: seen.append(sub) or False)
    isinstance(int, S)
    return ['ESCAPED', str(seen[0])]
"""
# plain cached_property: its attrname is not the tool's to write
PLAIN_ATTRNAME = """
from functools import cached_property

def run():
    \"\"\"No subclass.\"\"\"
    cp = cached_property(lambda self: 1)
    cp.attrname = '__reduce_ex__'
    return 'ESCAPED'
"""
# what a tool does with them every day still works
EVERYDAY = """
from functools import cached_property
from dataclasses import dataclass, field, asdict, astuple, replace

@dataclass
class Item:
    name: str
    tags: list = field(default_factory=list)

@dataclass
class Order:
    items: list
    note: dict

    @cached_property
    def count(self) -> int:
        return len(self.items)

def run() -> list:
    \"\"\"Plain dataclass helpers.\"\"\"
    order = Order([Item("tea", ["hot"]), Item("cake")], {"table": 4})
    order.count
    again = replace(order, note={"table": 5})
    return [asdict(order), list(astuple(again)[1].items()), again.count]
"""


@aio
async def test_the_attackers_tool_is_refused(runner: SandboxRunner, tmp_path: Path) -> None:
    res = await runner.run(SETATTR_ANY, {}, tmp_path)
    assert "ESCAPED" not in str(res.result), res
    assert not res.ok and "may not subclass functools.cached_property" in res.error_message, res


@aio
async def test_a_plain_cached_propertys_attrname_is_not_writable(
    runner: SandboxRunner, tmp_path: Path
) -> None:
    res = await runner.run(PLAIN_ATTRNAME, {}, tmp_path)
    assert not res.ok and "ESCAPED" not in str(res.result), res


@aio
async def test_everyday_dataclass_helpers_still_work(runner: SandboxRunner, tmp_path: Path) -> None:
    res = await runner.run(EVERYDAY, {}, tmp_path)
    assert res.ok, res
    assert res.result == [
        {
            "items": [{"name": "tea", "tags": ["hot"]}, {"name": "cake", "tags": []}],
            "note": {"table": 4},
        },
        [["table", 5]],
        2,
    ], res


class _Reducer:
    pass


@dataclasses.dataclass
class _Box:
    v: object


def test_the_helpers_never_deep_copy_and_refuse_a_hidden_attribute() -> None:
    """Behind the subclass rule: a dataclass instance whose own dict holds
    `__reduce_ex__` (as the real `cached_property` had written it) is refused; an
    object nested anywhere below (in a list, a dict, a deque: the next pass went
    round a walk of the graph that way) is returned as it is, its hooks never run:
    the tool's `asdict` and `astuple` make no `deepcopy`."""
    ran: list[int] = []
    hidden = _Reducer()
    hidden.__dict__["__reduce_ex__"] = lambda proto: ran.append(1) or (list, ())
    top = _Box(1)
    top.__dict__["__reduce_ex__"] = hidden.__dict__["__reduce_ex__"]
    for helper in (checked_types.asdict, checked_types.astuple, checked_types.replace):
        with pytest.raises(TypeError, match="no tool could set"):
            helper(top)
    for value in (hidden, [1, {"k": (hidden,)}], deque([hidden]), _Box(hidden)):
        made = checked_types.asdict(_Box(value))["v"]
        assert _found(made, hidden), made
        assert _found(checked_types.astuple(_Box(value))[0], hidden)
    assert ran == [], "no deepcopy: the hook never ran"


def _found(made: object, wanted: object) -> bool:
    """`wanted` itself (not a copy) somewhere in `made`."""
    if made is wanted:
        return True
    if isinstance(made, dict):
        return any(_found(v, wanted) for v in made.values())
    if isinstance(made, (list, tuple, deque)):
        return any(_found(v, wanted) for v in made)
    return False


def test_the_helpers_refuse_forged_fields_and_classes() -> None:
    class Forged:
        __dataclass_fields__ = {"a": "not a Field"}  # noqa: RUF012

    with pytest.raises(TypeError, match="forged dataclass fields"):
        checked_types.replace(Forged())
    with pytest.raises(TypeError, match="instances"):
        checked_types.asdict(_Box)


def test_cached_property_values_and_nesting_pass() -> None:
    class WithCache:
        @cached_property
        def total(self) -> int:
            return 3

    holder = WithCache()
    assert holder.total == 3  # stored under "total": a name a tool could write
    assert checked_types.asdict(_Box([holder]))["v"][0].total == 3
    assert checked_types.astuple(_Box({"a": 1})) == ({"a": 1},)
    assert checked_types.replace(_Box(1), v=2) == _Box(2)
