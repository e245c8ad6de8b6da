"""Second layers: switch one layer off and show the next one still blocks.

- lint off -> RestrictedPython compile and the run-time guards refuse.
- lint and RestrictedPython off (plain compile, full builtins, `import os`
  works) -> the process layers: Landlock, seccomp, dropped capabilities, rlimits.
- the path gate off (plain `open`) -> Landlock refuses paths outside the workspace.
- seccomp off -> Landlock still refuses TCP connect (ABI >= 4).
A test whose layer this machine lacks is skipped with the reason, never passed.
"""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from forge.child import Layers
from forge.runner import SandboxRunner
from tests.forge.helpers import tool

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def _runner(layers: Layers) -> SandboxRunner:
    r = SandboxRunner(check_lint=False, layers=layers)
    await r.start()
    return r


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def no_lint() -> AsyncIterator[SandboxRunner]:
    r = await _runner(Layers())
    yield r
    await r.aclose()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def raw_python() -> AsyncIterator[SandboxRunner]:
    r = await _runner(Layers(restricted=False))
    yield r
    await r.aclose()


def _need(r: SandboxRunner, layer: str) -> None:
    if not r.capabilities().get(layer, {}).get("available"):
        pytest.skip(f"this machine lacks {layer}: {r.capabilities().get(layer)}")


@pytest.mark.parametrize(
    "src",
    [
        tool("g = (i for i in [1])\nreturn g.gi_frame"),
        tool("try:\n    pass\nexcept* Exception:\n    pass"),
        tool("return 1") + "\ndef f(_getattr_, /):\n    return 1\n",
        tool("return ().__class__"),
        tool("return eval('1')"),
        tool("return 1", imports="import os as _os"),
    ],
)
async def test_compile_refuses_without_lint(
    no_lint: SandboxRunner, workspace: Path, src: str
) -> None:
    res = await no_lint.run(src, {}, workspace)
    assert res.error_kind == "compile", (res.error_kind, res.error_message)


@pytest.mark.parametrize(
    ("body", "imports"),
    [
        ("return os.listdir('/')", "import os"),
        ("return str(Formatter)", "from string import Formatter"),
        ("return getattr(1, 'real')", ""),
        (
            "try:\n    json.nothing\nexcept AttributeError as e:\n    return str(e.obj)",
            "import json",
        ),
        ("return str(statistics.sys)", "import statistics"),
    ],
)
async def test_guards_refuse_without_lint(
    no_lint: SandboxRunner, workspace: Path, body: str, imports: str
) -> None:
    res = await no_lint.run(tool(body, imports=imports), {}, workspace)
    assert res.error_kind == "runtime", (res.error_kind, res.error_message)
    assert any(w in res.error_message for w in ("ImportError", "NameError", "AttributeError"))


async def test_landlock_stops_writes_outside(raw_python: SandboxRunner, workspace: Path) -> None:
    _need(raw_python, "landlock")
    target = workspace.parent / "escaped.txt"
    body = f"open({str(target)!r}, 'w').write('x')"
    res = await raw_python.run(tool(body), {}, workspace)
    assert res.error_kind == "runtime" and "PermissionError" in res.error_message
    assert not target.exists()


async def test_landlock_stops_reads_outside(raw_python: SandboxRunner, workspace: Path) -> None:
    _need(raw_python, "landlock")
    res = await raw_python.run(tool("return open('/etc/passwd').read()"), {}, workspace)
    assert res.error_kind == "runtime" and "PermissionError" in res.error_message


async def test_raw_python_can_still_use_workspace(
    raw_python: SandboxRunner, workspace: Path
) -> None:
    body = "open('ok.txt', 'w').write('fine')\nreturn open('ok.txt').read()"
    res = await raw_python.run(tool(body), {}, workspace)
    assert res.ok and res.result == "fine"


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("fork bomb", "import os\nreturn os.fork()"),
        ("shell", "import subprocess\nreturn subprocess.run(['id']).returncode"),
        ("socket", "import socket\nreturn str(socket.socket())"),
        ("symlink", "import os\nos.symlink('/etc/passwd', 'l')\nreturn 1"),
        ("hard link", "import os\nos.link('/etc/passwd', 'h')\nreturn 1"),
        ("kill helper", "import os\nos.kill(os.getppid(), 9)\nreturn 1"),
    ],
)
async def test_process_layers_without_restricted_python(
    raw_python: SandboxRunner, workspace: Path, name: str, body: str
) -> None:
    _need(raw_python, "seccomp")
    pid = raw_python.helper_pid()
    res = await raw_python.run(tool(body), {}, workspace)
    assert not res.ok and res.error_kind == "runtime", (name, res)
    assert any(w in res.error_message for w in ("PermissionError", "BlockingIOError", "OSError"))
    assert raw_python.helper_pid() == pid
    assert os.listdir(workspace) == []


async def test_system_exit_and_evil_results(raw_python: SandboxRunner, workspace: Path) -> None:
    res = await raw_python.run(tool("raise SystemExit(0)"), {}, workspace)
    assert res.error_kind == "runtime" and "SystemExit" in res.error_message
    evil = (
        tool("return [Evil()]")
        + "\nclass Evil:\n    def __repr__(self):\n        while True:\n            pass\n"
        "    def __eq__(self, other):\n        raise SystemExit(1)\n"
    )
    res = await raw_python.run(evil, {}, workspace, timeout_s=2)
    assert res.error_kind == "output" and "JSON" in res.error_message


async def test_gate_off_landlock_on(workspace: Path) -> None:
    r = await _runner(Layers(gate=False))
    try:
        _need(r, "landlock")
        target = workspace.parent / "gate_off.txt"
        body = f"open({str(target)!r}, 'w').write('x')"
        res = await r.run(tool(body), {}, workspace)
        assert res.error_kind == "runtime" and "PermissionError" in res.error_message
        assert not target.exists()
    finally:
        await r.aclose()


async def test_seccomp_off_landlock_blocks_tcp(workspace: Path) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    r = await _runner(Layers(restricted=False, seccomp=False))
    try:
        _need(r, "landlock_network")
        body = f"import socket\ns = socket.socket()\ns.connect(('127.0.0.1', {port}))\nreturn 1"
        res = await r.run(tool(body), {}, workspace)
        assert res.error_kind == "runtime" and "PermissionError" in res.error_message
    finally:
        await r.aclose()
        server.close()
