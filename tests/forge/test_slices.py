"""The processes on a call's path ask for a short time slice (forge.confine.sched).

The helper and the child a call is handed to run with `CALL_SLICE_NS`, so on a
busy machine they wake up ahead of the work in the background (the zygote's next
fork, the waiting children preparing themselves), which keep the default slice.
Read from /proc/PID/sched (`se.slice`); skipped where the kernel does not show it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from forge.confine.sched import CALL_SLICE_NS, set_slice
from forge.layers import Layers
from forge.runner import SandboxRunner
from tests.waits import HANG_S

ONE = '''
def run() -> int:
    """One."""
    return 1
'''


def slice_of(pid: int) -> int | None:
    try:
        lines = Path(f"/proc/{pid}/sched").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("se.slice"):
            return int(line.split(":")[1])
    return None


needs_slices = pytest.mark.skipif(
    slice_of(os.getpid()) is None, reason="the kernel does not show se.slice"
)


@needs_slices
def test_set_slice_reaches_another_process_of_the_same_user() -> None:
    sleeper = subprocess.Popen(
        [sys.executable, "-I", "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        default = slice_of(sleeper.pid)
        assert set_slice(sleeper.pid, CALL_SLICE_NS)
        if default == CALL_SLICE_NS or slice_of(sleeper.pid) != CALL_SLICE_NS:
            pytest.skip("this kernel ignores the slice of SCHED_OTHER (before 6.12)")
    finally:
        assert sleeper.stdin is not None
        sleeper.stdin.close()
        sleeper.wait()


def test_set_slice_of_no_process_is_refused_quietly() -> None:
    with open("/proc/sys/kernel/pid_max") as f:
        beyond = int(f.read()) + 1
    assert set_slice(beyond, CALL_SLICE_NS) is False


@needs_slices
@pytest.mark.asyncio
async def test_the_helper_has_the_short_slice_the_zygote_not(
    workspace: Path,
) -> None:
    runner = SandboxRunner(default_timeout_s=HANG_S)
    await runner.start()
    try:
        res = await runner.run(ONE, {}, workspace)
        assert res.ok, res
        helper, zygote = runner.helper_pid(workspace), runner.zygote_pid(workspace)
        assert helper is not None and zygote is not None
        if slice_of(helper) != CALL_SLICE_NS:
            pytest.skip("this kernel ignores the slice of SCHED_OTHER (before 6.12)")
        # the waiting children inherit the zygote's (the one that ran may still exit)
        assert slice_of(zygote) not in (None, CALL_SLICE_NS)
    finally:
        await runner.aclose()


@needs_slices
@pytest.mark.asyncio
async def test_short_slices_off_leaves_the_helper_at_the_default(workspace: Path) -> None:
    runner = SandboxRunner(default_timeout_s=HANG_S, short_slices=False)
    await runner.start()
    try:
        res = await runner.run(ONE, {}, workspace)
        assert res.ok, res
        helper = runner.helper_pid(workspace)
        assert helper is not None
        assert slice_of(helper) not in (None, CALL_SLICE_NS)
    finally:
        await runner.aclose()


PRIORITY = '''
import os
import resource

def run() -> dict:
    """Try to raise this process's priority."""
    tried = {}
    for name, attempt in (
        ("nice", lambda: os.nice(-1)),
        ("fifo", lambda: os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))),
    ):
        try:
            attempt()
            tried[name] = "raised"
        except OSError as exc:
            tried[name] = type(exc).__name__
    tried["limits"] = [
        resource.getrlimit(resource.RLIMIT_NICE), resource.getrlimit(resource.RLIMIT_RTPRIO)
    ]
    return tried
'''


@pytest.mark.asyncio
async def test_a_child_cannot_raise_its_priority(workspace: Path) -> None:
    # the process layers only (no restricted Python): the tool may call os itself
    runner = SandboxRunner(
        default_timeout_s=HANG_S, layers_for_tests=Layers(lint=False, restricted=False)
    )
    await runner.start()
    try:
        res = await runner.run(PRIORITY, {}, workspace)
        assert res.ok, res
        assert res.result == {
            "nice": "PermissionError",
            "fifo": "PermissionError",
            "limits": [[0, 0], [0, 0]],
        }
    finally:
        await runner.aclose()
