"""No tool code runs after a call's write budget is checked (forge.child,
forge.child_report).

The attacker pass atk1 (session 32) returned a `dict` subclass whose `items()`
wrote: `json.dumps` called it while serialising the result, after the budget's
check and its undo, so a 16 MiB half-written file stayed in a call reported as
ok. A suspended generator whose `finally` writes, dropped with the result, did
the same. Now the result is copied into plain JSON data while the call still
runs (the `dict`'s own items, never the override), and whatever the tool left
to run when it is dropped runs before the check.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from forge.runner import SandboxRunner

aio = pytest.mark.asyncio(loop_scope="module")

# the attacker's tool (scratch/p6), verbatim
LATE_WRITER = """
class R(dict):
    def items(self):
        f = open('victim.txt', 'w')
        f.write('HALF-')
        f.flush()
        try:
            while True:
                f.write('x' * 1048576)
                f.flush()
        except OSError as e:
            pass
        return [('late', 'ran after run() returned')]

def run():
    \"\"\"late writer\"\"\"
    with open('victim.txt', 'w') as f:
        f.write('original content\\n')
    return R(a=1)
"""

_FILL = """
def fill():
    f = open('victim.txt', 'w')
    f.write('HALF-')
    try:
        while True:
            f.write('x' * 1048576)
            f.flush()
    except OSError:
        pass
"""

# a generator the result alone holds: its `finally` runs when the result is dropped
GENERATOR = (
    _FILL
    + """
def gen():
    try:
        yield 1
    finally:
        fill()

class R(dict):
    pass

def run():
    \"\"\"late generator\"\"\"
    with open('victim.txt', 'w') as f:
        f.write('original content\\n')
    r = R(a=1)
    g = gen()
    next(g)
    r.g = g
    return r
"""
)

# a library `__repr__` calling the tool's override while the error is formatted
MESSAGE = (
    _FILL
    + """
from collections import Counter

class C(Counter):
    def most_common(self, n=None):
        fill()
        return []

def run():
    \"\"\"late message\"\"\"
    with open('victim.txt', 'w') as f:
        f.write('original content\\n')
    raise ValueError(C(a=1))
"""
)


@aio
async def test_serialising_a_dict_subclass_runs_none_of_its_methods(
    runner: SandboxRunner, workspace: Path
) -> None:
    res = await runner.run(LATE_WRITER, {}, workspace)
    assert res.ok, res
    assert res.result == {"a": 1}  # the dict's own items, not what `items()` answers
    assert (workspace / "victim.txt").read_text() == "original content\n"


@aio
async def test_what_runs_when_the_result_is_dropped_is_checked(
    runner: SandboxRunner, workspace: Path
) -> None:
    res = await runner.run(GENERATOR, {}, workspace)
    assert not res.ok and res.error_kind == "quota", res
    assert "nothing was kept" in res.error_message
    assert not (workspace / "victim.txt").exists()  # truncated by the late writer: removed


@aio
async def test_an_error_message_is_formatted_before_the_check(
    runner: SandboxRunner, workspace: Path
) -> None:
    res = await runner.run(MESSAGE, {}, workspace)
    assert not res.ok and res.error_kind == "quota", res
    assert not (workspace / "victim.txt").exists()


@aio
async def test_json_subclasses_still_come_back_as_their_values(
    runner: SandboxRunner, workspace: Path
) -> None:
    source = """
from collections import Counter, OrderedDict, namedtuple, defaultdict
from re import IGNORECASE

class Name(str):
    pass

def run():
    \"\"\"Returns library containers.\"\"\"
    od = OrderedDict(a=1, b=2)
    od.move_to_end('a')
    P = namedtuple('P', 'x y')
    dd = defaultdict(list)
    dd['k'].append(Name('v'))
    return {'counter': Counter('aab'), 'ordered': od, 'point': P(1, 2.5), 'dd': dd,
            Name('key'): (True, None, IGNORECASE), 'level': {IGNORECASE: 'high'}}
"""
    res = await runner.run(source, {}, workspace)
    assert res.ok, res
    assert res.result == {
        "counter": {"a": 2, "b": 1},
        "ordered": {"b": 2, "a": 1},
        "point": [1, 2.5],
        "dd": {"k": ["v"]},
        "key": [True, None, 2],
        "level": {"2": "high"},
    }
    assert list(res.result["ordered"]) == ["b", "a"]


@aio
@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("x = []\n    x.append(x)\n    return x", "Circular reference detected"),
        ("return {(1, 2): 3}", "keys must be str, int, float, bool or None, not tuple"),
        ("return {1, 2}", "Object of type set is not JSON serializable"),
        ("return float('nan')", "Out of range float values are not JSON compliant"),
    ],
)
async def test_a_result_that_is_not_json_is_refused(
    runner: SandboxRunner, workspace: Path, body: str, why: str
) -> None:
    res = await runner.run(f'def run():\n    """Odd."""\n    {body}\n', {}, workspace)
    assert not res.ok and res.error_kind == "output", res
    assert "the result is not JSON-serialisable" in res.error_message
    assert why in res.error_message
