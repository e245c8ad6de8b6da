"""The helper's rehearsal (forge.rehearsal): forge's own tool, run through a child's
call path before the zygote forks, succeeds (a failing one would warm nothing),
is a valid tool, and leaves the helper and zygote where they were: in /, with
no descriptor or directory of its workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from forge.lint import lint
from forge.rehearsal import TOOL, rehearse_calls
from forge.runner import SandboxRunner
from forge.schema import describe_tool
from forge.warmup import prepare
from tests.forge.helpers import tool
from tests.waits import HANG_S

aio = pytest.mark.asyncio(loop_scope="module")


def test_the_rehearsal_tool_is_a_valid_tool() -> None:
    assert lint(TOOL) == []
    assert describe_tool(TOOL).schema["required"] == ["path"]


def test_the_rehearsal_runs_the_call_path_to_a_result() -> None:
    ctx, _ = prepare()
    cwd = os.getcwd()
    doc = rehearse_calls(ctx, runs=2)
    assert doc == {"ok": True, "result": doc["result"], "printed": doc["printed"]}
    assert doc["result"] == {"n": 20, "sum": 570.0 + 57, "when": "2024-01-05"}
    assert doc["printed"].startswith("A:1, B:1, C:1 2024-01-05T03:04:05")
    assert os.getcwd() == cwd
    os.close(ctx.devnull)
    for fd in ctx.read_fds:
        os.close(fd)


def _where(pid: int) -> tuple[str, list[str]]:
    fds = Path(f"/proc/{pid}/fd")
    return os.readlink(f"/proc/{pid}/cwd"), [os.readlink(fds / fd) for fd in os.listdir(fds)]


@aio
async def test_the_helper_and_zygote_keep_nothing_of_the_rehearsal(workspace: Path) -> None:
    r = SandboxRunner(default_timeout_s=HANG_S)
    await r.start()
    try:
        assert (await r.run(tool("return 2"), {}, workspace)).result == 2
        for pid in (r.helper_pid(workspace), r.zygote_pid(workspace)):
            assert pid is not None
            cwd, fds = _where(pid)
            assert cwd == "/"
            assert not [fd for fd in fds if "forge-rehearsal" in fd]
    finally:
        await r.aclose()
