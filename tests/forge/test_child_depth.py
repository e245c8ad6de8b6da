"""How many children a helper forks ahead of demand (forge.child_pool): the
runner's `idle_children`, on the helper's command line; every call still runs in
a fresh child whatever the depth (tests/forge/test_fresh_child.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from forge.child_pool import IDLE_CHILDREN
from forge.layers import Layers
from forge.runner import SandboxRunner
from forge.worker import ZYGOTE_WAIT_S, arguments
from tests.waits import HANG_S

SQUARE = '''
def run(n: int) -> int:
    """Square a number."""
    return n * n
'''


def test_the_command_line_names_the_depth_or_leaves_the_default() -> None:
    assert arguments([]) == (Layers(), -1, True, True, IDLE_CHILDREN, ZYGOTE_WAIT_S)
    assert arguments(["children=1", "answers=7"])[1:5] == (7, True, True, 1)
    assert arguments(["cold", "default-slices"])[2:4] == (False, False)
    assert arguments([]).zygote_wait_s == ZYGOTE_WAIT_S
    assert arguments(["zygote-wait=0.75"]).zygote_wait_s == 0.75
    assert arguments(["zygote-wait=0"]).zygote_wait_s == 0.1  # never a helper that retires at once


@pytest.mark.asyncio
@pytest.mark.parametrize("depth", [1, 4])
async def test_calls_run_at_any_depth(depth: int, workspace: Path) -> None:
    runner = SandboxRunner(default_timeout_s=HANG_S, idle_children=depth)
    await runner.start()
    try:
        for n in range(6):
            res = await runner.run(SQUARE, {"n": n}, workspace)
            assert res.ok and res.result == n * n, res
    finally:
        await runner.aclose()
