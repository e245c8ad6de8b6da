"""The processes on a call's path ask for a short time slice (forge.confine.sched).

The helper and the child a call is handed to run with `CALL_SLICE_NS`, so on a
busy machine they wake up ahead of the work in the background (the zygote's next
fork, the waiting children preparing themselves), which take the longest slice,
`BACKGROUND_SLICE_NS` (and so does a child once it has answered, for its exit).
Read from /proc/PID/sched (`se.slice`); skipped where the kernel does not show it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from forge.confine.sched import BACKGROUND_SLICE_NS, CALL_SLICE_NS, set_slice
from forge.layers import Layers
from forge.runner import SandboxRunner
from tests.waits import HANG_S, until

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


def children_of(pid: int) -> list[int]:
    out = []
    for entry in Path(f"/proc/{pid}/task").iterdir():
        with open(entry / "children") as f:
            out += [int(child) for child in f.read().split()]
    return out


@needs_slices
def test_a_process_gives_itself_the_background_slice() -> None:
    script = (
        "from forge.confine.sched import BACKGROUND_SLICE_NS, set_own_slice, slice_attr\n"
        "import os, sys\n"
        "ok = set_own_slice(slice_attr(BACKGROUND_SLICE_NS, os.getpriority(os.PRIO_PROCESS, 0)))\n"
        "print(ok, flush=True)\n"
        "sys.stdin.read()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            if proc.stdout.readline().strip() != "True" or slice_of(proc.pid) == CALL_SLICE_NS:
                pytest.skip("this kernel ignores the slice of SCHED_OTHER (before 6.12)")
            assert slice_of(proc.pid) == BACKGROUND_SLICE_NS
        finally:
            proc.stdin.close()


@needs_slices
@pytest.mark.asyncio
async def test_the_zygote_and_waiting_children_have_the_background_slice(
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
        assert slice_of(zygote) == BACKGROUND_SLICE_NS
        # the waiting children inherit it; the one that ran takes it again once it has
        # answered, and exits (until then it may still hold the call's short slice)

        def slices() -> set[int | None]:
            return {slice_of(child) for child in children_of(zygote)} - {None}

        await until(lambda: slices() == {BACKGROUND_SLICE_NS}, "only background slices")
    finally:
        await runner.aclose()


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
        helper, zygote = runner.helper_pid(workspace), runner.zygote_pid(workspace)
        assert helper is not None and zygote is not None
        assert slice_of(helper) not in (None, CALL_SLICE_NS)
        assert slice_of(zygote) not in (None, CALL_SLICE_NS, BACKGROUND_SLICE_NS)
    finally:
        await runner.aclose()


@needs_slices
@pytest.mark.asyncio
async def test_background_slices_off_leaves_the_zygote_at_the_default(workspace: Path) -> None:
    runner = SandboxRunner(default_timeout_s=HANG_S, background_slices=False)
    await runner.start()
    try:
        res = await runner.run(ONE, {}, workspace)
        assert res.ok, res
        helper, zygote = runner.helper_pid(workspace), runner.zygote_pid(workspace)
        assert helper is not None and zygote is not None
        if slice_of(helper) != CALL_SLICE_NS:
            pytest.skip("this kernel ignores the slice of SCHED_OTHER (before 6.12)")
        assert slice_of(zygote) not in (None, CALL_SLICE_NS, BACKGROUND_SLICE_NS)
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


LONGER = '''
import os
from forge.confine.sched import BACKGROUND_SLICE_NS, set_own_slice, slice_attr

def run() -> bool:
    """Take the background slice, as a child does once it has answered."""
    return set_own_slice(slice_attr(BACKGROUND_SLICE_NS, os.getpriority(os.PRIO_PROCESS, 0)))
'''


@needs_slices
@pytest.mark.asyncio
async def test_a_confined_child_may_give_itself_the_background_slice(workspace: Path) -> None:
    # every process layer on (seccomp, Landlock, rlimits): what a child does once it
    # has answered, before its exit, is allowed there (it was handed the short slice)
    runner = SandboxRunner(
        default_timeout_s=HANG_S, layers_for_tests=Layers(lint=False, restricted=False)
    )
    await runner.start()
    try:
        res = await runner.run(LONGER, {}, workspace)
        assert res.ok, res
        assert res.result is True
    finally:
        await runner.aclose()
