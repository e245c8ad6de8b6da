"""The helper's rehearsal (forge.rehearsal): forge's own tool, run through a child's
call path before the zygote forks, succeeds (a failing one would warm nothing),
is a valid tool, and leaves the helper and zygote where they were: in /, with
no descriptor or directory of its workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from forge import rehearsal
from forge.lint import lint
from forge.rehearsal import TOOL, rehearse_calls
from forge.runner import SandboxRunner
from forge.schema import describe_tool
from forge.warmup import prepare
from tests.forge.helpers import descriptors, tool
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
    """Its cwd and what its descriptors name (one closed while listed is skipped:
    the helper and zygote go on taking children)."""
    return os.readlink(f"/proc/{pid}/cwd"), list(descriptors(pid).values())


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


# Shared objects of modules no tool can use, which `tempfile` (through `shutil`)
# used to load into the helper, and so into its zygote and every child it forks.
ARCHIVERS = ("zlib.cpython", "_bz2.cpython", "_lzma.cpython", "libbz2", "liblzma")


def _mapped(pid: int) -> str:
    return Path(f"/proc/{pid}/maps").read_text()


@aio
async def test_the_zygote_maps_no_archive_module(workspace: Path) -> None:
    """Every mapping of the zygote is work for each fork and each child's exit."""
    r = SandboxRunner(default_timeout_s=HANG_S)
    await r.start()
    try:
        assert (await r.run(tool("return 3"), {}, workspace)).result == 3
        zygote = r.zygote_pid(workspace)
        assert zygote is not None
        maps = _mapped(zygote)
        assert "libpython" in maps or "python" in maps  # it read a real map
        assert [name for name in ARCHIVERS if name in maps] == []
    finally:
        await r.aclose()


def test_the_rehearsal_workspace_is_private_and_removed_without_following_links(
    tmp_path: Path,
) -> None:
    ws = rehearsal._workspace()
    try:
        assert os.stat(ws).st_mode & 0o777 == 0o700
        assert os.path.basename(ws).startswith("forge-rehearsal-")
        other = rehearsal._workspace()
        rehearsal._remove(other)
        assert other != ws and not os.path.exists(other)
        outside = tmp_path / "outside"
        outside.mkdir()
        (outside / "keep.txt").write_text("kept")
        os.makedirs(os.path.join(ws, "a", "b"))
        Path(ws, "a", "b", "f.txt").write_text("x")
        Path(ws, "data.csv").write_text("a\n1\n")
        os.symlink(outside, os.path.join(ws, "link"))
    finally:
        rehearsal._remove(ws)
    assert not os.path.exists(ws)
    assert (outside / "keep.txt").read_text() == "kept"
