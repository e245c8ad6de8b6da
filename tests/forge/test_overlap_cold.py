"""Children that skip the warm-up while a helper's calls overlap (forge.child_pool
`ChildPool.overlap`, issue 26). The runner tells the helper, with each call,
whether another call of that helper was in flight when it started; while the last
call to start was such a one, the children the helper asks for do not warm their
call's path (forge.child `_warm`): the cores are busy then, and a warm-up adds
work of its own. Only the warm-up changes: every call returns the same whichever
child runs it (a traced call shows a cold one), and once calls come one at a time
the children warm up again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from forge.child import READY_COLD
from forge.child_pool import IDLE_CHILDREN
from forge.runner import SandboxRunner
from tests.forge.helpers import tool

pytestmark = pytest.mark.asyncio(loop_scope="module")

# the first call runs until the second, started beside it, made its file
WAITS = tool("while not os.path.exists('go'):\n    pass\nreturn 'waited'", imports="import os")
MAKES = tool("with open('go', 'w') as f:\n    f.write('1')\nreturn 'made'")
SQUARE = tool("return n * n", params="n: int")


def _cold(r: SandboxRunner) -> bool:
    """Whether the child of the last traced call skipped the warm-up."""
    return READY_COLD in r.faults()[-1]


async def test_children_asked_for_while_calls_overlap_skip_the_warm_up(
    traced: SandboxRunner, workspace: Path
) -> None:
    for n in range(2 * IDLE_CHILDREN + 2):  # one call at a time: warmed children
        res = await traced.run(SQUARE, {"n": n}, workspace)
        assert res.ok and res.result == n * n, res
    assert not _cold(traced)
    waited, made = await asyncio.gather(
        traced.run(WAITS, {}, workspace), traced.run(MAKES, {}, workspace)
    )
    assert waited.ok and waited.result == "waited", waited
    assert made.ok and made.result == "made", made
    kinds = []
    for n in range(2 * IDLE_CHILDREN + 2):
        res = await traced.run(SQUARE, {"n": n}, workspace)
        assert res.ok and res.result == n * n, res  # whichever child ran it
        kinds.append(_cold(traced))
    # the children asked for after the overlapping pair wait for the next calls
    assert any(kinds[: IDLE_CHILDREN + 1]), kinds
    assert not kinds[-1], kinds  # calls one at a time: warmed children again
