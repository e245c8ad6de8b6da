"""Children confined to their helper's workspace while they wait (forge.zygote `bind`).

Once a call has named a helper's workspace, the children forked afterwards add
it to their Landlock ruleset, enforce it and move into it before their call
arrives, so a call's path skips those steps (its trace has no "landlock" stage).
These tests show that such a child is as confined as one that does it per call
(a raw-Python tool cannot write or read outside), and that a call never runs in
a workspace other than its own when the directory behind the workspace's path
changes (replaced, or a symlink retargeted): the helper kills the children bound
to the old one and binds the new one.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
import pytest_asyncio

from forge.layers import Layers
from forge.runner import SandboxRunner
from tests.forge.helpers import tool
from tests.waits import HANG_S

pytestmark = pytest.mark.asyncio(loop_scope="module")
CALLS = 6  # more than the children forked ahead before the first call (three)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def raw_python() -> AsyncIterator[SandboxRunner]:
    layers = replace(Layers(), lint=False, restricted=False)
    r = SandboxRunner(default_timeout_s=HANG_S, trace=True, layers_for_tests=layers)
    await r.start()
    yield r
    await r.aclose()


def _landlock(r: SandboxRunner) -> None:
    if not r.capabilities().get("landlock", {}).get("available"):
        pytest.skip(f"this machine lacks landlock: {r.capabilities().get('landlock')}")


async def test_later_calls_skip_the_workspace_step(traced: SandboxRunner, workspace: Path) -> None:
    _landlock(traced)
    first = len(traced.stages())
    for i in range(CALLS):
        res = await traced.run(tool("return n + 1", params="n: int"), {"n": i}, workspace)
        assert res.ok and res.result == i + 1, res
    rows = traced.stages()[first:]
    assert "landlock" in rows[0]  # the spare's children: not bound yet
    assert "landlock" not in rows[-1], rows[-1]  # forked after the first call: bound


async def test_a_bound_child_is_confined(raw_python: SandboxRunner, workspace: Path) -> None:
    _landlock(raw_python)
    outside = workspace.parent / "escaped.txt"
    body = f"""
import os
out = [os.getcwd()]
for attempt in (lambda: open({str(outside)!r}, "w"), lambda: open("/etc/passwd")):
    try:
        attempt()
        out.append("opened")
    except PermissionError:
        out.append("refused")
open("mine.txt", "w").write("x")
return out
"""
    first = len(raw_python.stages())
    for _ in range(CALLS):
        res = await raw_python.run(tool(body), {}, workspace)
        assert res.ok and res.result == [str(workspace), "refused", "refused"], res
    assert "landlock" not in raw_python.stages()[first:][-1]
    assert not outside.exists()
    assert (workspace / "mine.txt").read_text() == "x"


async def _where(r: SandboxRunner, ws: Path, name: str) -> None:
    body = f"open({name!r}, 'w').write('here')\nreturn sorted(listdir('.'))"
    res = await r.run(tool(body), {}, ws)
    assert res.ok and name in res.result, res


async def test_a_replaced_workspace_gets_new_children(
    traced: SandboxRunner, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(CALLS):
        await _where(traced, ws, f"old{i}")
    ws.rename(tmp_path / "gone")
    ws.mkdir()
    for i in range(CALLS):
        await _where(traced, ws, f"new{i}")
    assert sorted(os.listdir(ws)) == [f"new{i}" for i in range(CALLS)]
    assert sorted(os.listdir(tmp_path / "gone")) == [f"old{i}" for i in range(CALLS)]


async def test_a_retargeted_symlink_gets_new_children(
    traced: SandboxRunner, tmp_path: Path
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    link = tmp_path / "ws"
    link.symlink_to(tmp_path / "a")
    for i in range(CALLS):
        await _where(traced, link, f"a{i}")
    link.unlink()
    link.symlink_to(tmp_path / "b")
    for i in range(CALLS):
        await _where(traced, link, f"b{i}")
    assert sorted(os.listdir(tmp_path / "a")) == [f"a{i}" for i in range(CALLS)]
    assert sorted(os.listdir(tmp_path / "b")) == [f"b{i}" for i in range(CALLS)]


@pytest.mark.parametrize("kind", ["missing", "file", "under a file"])
async def test_a_workspace_that_is_no_directory_binds_nothing(
    traced: SandboxRunner, tmp_path: Path, kind: str
) -> None:
    ws = tmp_path / "ws"
    if kind != "missing":
        ws.write_text("not a directory")
    if kind == "under a file":
        ws = ws / "sub"
    res = await traced.run(tool("return 1"), {}, ws)
    assert res.error_kind == "runtime" and "is not a directory" in res.error_message, res
