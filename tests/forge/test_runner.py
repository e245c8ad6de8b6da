"""The runner: capabilities, concurrency, helper restart, the CLI."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from forge.runner import SandboxRunner
from tests.forge.helpers import tool
from tests.waits import HANG_S, until

aio = pytest.mark.asyncio(loop_scope="module")
ROOT = Path(__file__).resolve().parents[2]


@aio
async def test_capabilities_reported(runner: SandboxRunner) -> None:
    caps = runner.capabilities()
    for layer in ("landlock", "seccomp", "rlimit_nproc"):
        assert isinstance(caps[layer]["available"], bool) and caps[layer]["detail"]
    assert set(runner.missing_layers()) == {k for k, v in caps.items() if not v["available"]}


@aio
async def test_concurrent_calls(runner: SandboxRunner, workspace: Path) -> None:
    src = tool("return n * n", params="n: int")
    slow = tool("x = 0\nfor i in range(300000):\n    x += i\nreturn n", params="n: int")
    results = await asyncio.gather(
        *(runner.run(slow if n % 3 == 0 else src, {"n": n}, workspace) for n in range(12))
    )
    assert [r.result for r in results] == [n if n % 3 == 0 else n * n for n in range(12)]


@aio
async def test_timeout_does_not_block_others(runner: SandboxRunner, workspace: Path) -> None:
    loop = tool("while True:\n    pass")
    quick = tool("return 1")
    slow, fast = await asyncio.gather(
        runner.run(loop, {}, workspace, timeout_s=1.0), runner.run(quick, {}, workspace)
    )
    assert slow.error_kind == "timeout" and fast.ok


@aio
async def test_each_call_is_a_fresh_process(runner: SandboxRunner, workspace: Path) -> None:
    src = "import random\ndef run() -> float:\n    '''d'''\n    return random.random()\n"
    first = await runner.run(src, {}, workspace)
    second = await runner.run(src, {}, workspace)
    assert first.ok and second.ok and first.result != second.result


@aio
async def test_helper_restarts_after_dying(workspace: Path) -> None:
    r = SandboxRunner(default_timeout_s=HANG_S)
    await r.start()
    try:
        pid = r.helper_pid()
        assert pid is not None
        busy = tool("open('started', 'w').write('x')\nwhile True:\n    pass")
        pending = asyncio.create_task(r.run(busy, {}, workspace))
        await until(lambda: (workspace / "started").exists(), "the call runs")
        os.kill(pid, signal.SIGKILL)
        res = await pending
        assert res.error_kind == "runtime" and "helper" in res.error_message
        res = await r.run(tool("return 5"), {}, workspace)
        assert res.ok and res.result == 5 and r.helper_pid() != pid
    finally:
        await r.aclose()


@aio
async def test_the_call_after_a_missed_deadline_goes_to_a_new_helper(
    runner: SandboxRunner, workspace: Path
) -> None:
    """A stopped helper answers nothing: the runner kills it at the call's deadline
    (plus its grace) and the very next call, made before the kill has been seen to
    end it, runs in a new helper instead of failing in the dying one. (The late call
    is a tool new to the helper, so it goes through the helper; a call written into
    a lent child while its helper is stopped: tests/forge/test_lent_children.py.)"""
    quick = tool("return 1")
    assert (await runner.run(quick, {}, workspace)).ok
    pid = runner.helper_pid(workspace)
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        late = await runner.run(tool("return 2"), {}, workspace, timeout_s=0.1)
        assert late.error_kind == "timeout", late
        res = await runner.run(quick, {}, workspace)
        assert res.ok, res
        assert runner.helper_pid(workspace) not in (None, pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "forge", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=HANG_S,
        check=False,
    )


def test_cli_run_and_lint(tmp_path: Path, workspace: Path) -> None:
    good = tmp_path / "good.py"
    good.write_text(tool("return {'sum': a + b}", params="a: int, b: int"))
    out = _cli("run", str(good), "--workspace", str(workspace), "--params", '{"a": 2, "b": 3}')
    assert out.returncode == 0
    assert json.loads(out.stdout) == {"ok": True, "result": {"sum": 5}, "error": None}
    bad = tmp_path / "bad.py"
    bad.write_text(tool("return shutil.which('sh')", imports="import shutil"))
    out = _cli("run", str(bad), "--workspace", str(workspace))
    doc = json.loads(out.stdout)
    assert out.returncode == 1 and doc["ok"] is False and doc["error"]["kind"] == "lint"
    lint = _cli("lint", str(bad))
    assert lint.returncode == 1 and "[F010]" in lint.stdout
    assert _cli("lint", str(good)).returncode == 0


@aio
async def test_trace_records_every_stage(workspace: Path) -> None:
    r = SandboxRunner(trace=True)
    await r.start()
    try:
        assert r.stages() == []
        res = await r.run(tool("return n * n", params="n: int"), {"n": 3}, workspace)
        assert res.ok and res.result == 9
        (stages,) = r.stages()
        for name in ("runner_sent", "helper_recv", "job", "fds", "globals", "ran", "runner_done"):
            assert name in stages, stages
        times = list(stages.values())
        assert times == sorted(times) and list(stages)[-1] == "runner_done"
    finally:
        await r.aclose()


@aio
async def test_default_runner_records_no_trace(runner: SandboxRunner, workspace: Path) -> None:
    res = await runner.run(tool("return 1"), {}, workspace)
    assert res.ok and runner.stages() == []


@aio
async def test_a_request_longer_than_one_read_of_the_helper(
    runner: SandboxRunner, workspace: Path
) -> None:
    # the helper reads the runner's frames STDIN_READ bytes at a time (forge.worker): a
    # tool's first call (its source goes through the helper) with 300 KB of arguments
    src = "def run(text: str) -> int:\n    '''Length.'''\n    return len(text)\n"
    text = "x" * 300_000
    first = await runner.run(src, {"text": text}, workspace)
    assert first.ok, first
    assert first.result == len(text)
    again = await runner.run(src, {"text": text + "y"}, workspace)
    assert again.ok, again
    assert again.result == len(text) + 1


def minor_faults(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[7])


@aio
async def test_the_helper_copies_no_page_per_call(runner: SandboxRunner, workspace: Path) -> None:
    # a read of the runner's frames into a fresh 1 MiB buffer was an mmap, its first
    # page faulted in, an mremap and an munmap in every call (about 2 faults a call)
    src = "def run(n: int) -> int:\n    '''Twice.'''\n    return 2 * n\n"
    for n in range(5):
        assert (await runner.run(src, {"n": n}, workspace)).ok
    helper = runner.helper_pid(workspace)
    assert helper is not None
    before = minor_faults(helper)
    calls = 80
    for n in range(calls):
        assert (await runner.run(src, {"n": n}, workspace)).ok
    assert runner.helper_pid(workspace) == helper
    assert minor_faults(helper) - before < calls // 2
