"""A waiting child warms its call's path before the call arrives (forge.child `_warm`).

While it waits, a child decodes a constant job, builds a path gate's globals in a
scratch dict and serialises a constant outcome, so the pages its call writes first
are copied off the call's path. These tests show that this leaves nothing a call
can see (the warm job's secret, workspace, gate or output), that a call's code is
always its own (a child forked before a tool changed runs the new source), and
that the warm-up does move the copying: counted in page faults, which the
runner's trace reports per stage of the child (`SandboxRunner.faults()`), not in
time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from forge.child import WARM_SECRET
from forge.runner import SandboxRunner
from tests.forge.helpers import tool
from tests.waits import HANG_S

pytestmark = pytest.mark.asyncio(loop_scope="module")

STAGES = ("forked", "ready", "job", "globals", "ran", "serialised")


async def test_the_warm_up_leaves_nothing_a_call_sees(
    traced: SandboxRunner, workspace: Path
) -> None:
    (workspace / "mine.txt").write_text("the call's own file")
    body = f"""
found = []
try:
    secret({WARM_SECRET!r})
    found.append("the warm job's secret")
except KeyError:
    pass
found.append(open("mine.txt").read())
found.append(sorted(listdir(".")))
return found
"""
    for _ in range(3):  # children forked ahead, each warmed
        res = await traced.run(tool(body), {}, workspace)
        assert res.ok, res
        assert res.result == ["the call's own file", ["mine.txt"]]
        assert res.printed == ""


async def test_a_child_forked_before_a_tool_changed_runs_the_new_source(
    traced: SandboxRunner, workspace: Path
) -> None:
    """Children wait with no tool code: each call's code travels in its job."""
    for version in range(4):
        res = await traced.run(tool(f"return {version}"), {}, workspace)
        assert res.ok and res.result == version, res


async def test_faults_are_counted_per_stage_of_the_child(
    traced: SandboxRunner, workspace: Path
) -> None:
    first = len(traced.faults())
    res = await traced.run(tool("return n * n", params="n: int"), {"n": 4}, workspace)
    assert res.ok and res.result == 16
    (faults,) = traced.faults()[first:]
    counts = [faults[stage] for stage in STAGES]
    assert counts == sorted(counts) and counts[0] > 0, faults
    assert len(traced.faults()) == len(traced.stages())


async def test_cpu_time_is_counted_per_stage_of_the_child(
    traced: SandboxRunner, workspace: Path
) -> None:
    """Beside the faults, each stage carries the child's CPU time so far (µs), never
    as a stage's time of day."""
    first = len(traced.cpu())
    res = await traced.run(tool("return sum(range(n))", params="n: int"), {"n": 10**5}, workspace)
    assert res.ok and res.result == sum(range(10**5))
    (cpu,) = traced.cpu()[first:]
    (stages,) = traced.stages()[first:]
    times = [cpu[stage] for stage in STAGES]
    assert times == sorted(times) and times[-1] > 0, cpu
    assert times[-1] > cpu["forked"]  # the child ran the loop: its CPU grew
    assert not any(name.startswith(("cpu@", "faults@")) for name in stages)
    assert len(traced.cpu()) == len(traced.stages())


async def test_the_call_path_is_warm_when_the_call_arrives(
    traced: SandboxRunner, workspace: Path
) -> None:
    """A trivial call copies far fewer pages after it arrives than its child
    copied while it prepared and warmed up (without the warm-up it copied more:
    decoding its job, binding its globals and serialising its outcome came
    first)."""
    first = len(traced.faults())
    for n in range(9):
        res = await traced.run(tool("return n * n", params="n: int"), {"n": n}, workspace)
        assert res.ok
    rows = traced.faults()[first:]
    on_path = sorted(r["serialised"] - r["ready"] for r in rows)
    off_path = sorted(r["ready"] - r["forked"] for r in rows)
    # about 50 against 300 here; a warm-up that stops early (it ignores errors)
    # leaves about 170 against 220
    assert 2 * on_path[len(rows) // 2] < off_path[len(rows) // 2], rows


async def test_taking_the_job_copies_few_pages(traced: SandboxRunner, workspace: Path) -> None:
    """Reading and decoding its job copies few pages in a warmed child: the warm-up
    also asked its (empty) job memfd for a buffer, the child's first allocation
    outside pymalloc, which copied 15-18 pages of glibc's arena when the job's read
    was the first."""
    first = len(traced.faults())
    for n in range(9):
        res = await traced.run(tool("return n * n", params="n: int"), {"n": n}, workspace)
        assert res.ok
    taking = sorted(r["job"] - r["ready"] for r in traced.faults()[first:])
    # about 22 here; 38-40 when the warm-up did not read
    assert taking[len(taking) // 2] < 32, taking


async def test_children_not_warmed_copy_more_on_the_calls_path(
    traced: SandboxRunner, workspace: Path
) -> None:
    """`warm_children=False` (for the bench's comparison) is the path before the
    warm-up: the same call then copies more pages after it arrives."""
    cold = SandboxRunner(default_timeout_s=HANG_S, trace=True, warm_children=False)
    await cold.start()
    medians = []
    try:
        for r in (traced, cold):
            first = len(r.faults())
            for n in range(9):
                assert (await r.run(tool("return n", params="n: int"), {"n": n}, workspace)).ok
            on_path = sorted(f["serialised"] - f["ready"] for f in r.faults()[first:])
            medians.append(on_path[len(on_path) // 2])
    finally:
        await cold.aclose()
    warm, not_warmed = medians
    assert 2 * warm < not_warmed, medians  # about 50 against 180


async def test_an_untraced_runner_counts_no_faults(workspace: Path) -> None:
    r = SandboxRunner(default_timeout_s=HANG_S)
    await r.start()
    try:
        assert (await r.run(tool("return 1"), {}, workspace)).ok
        assert r.faults() == []
    finally:
        await r.aclose()
