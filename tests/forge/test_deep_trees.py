"""No tool builds a tree whose paths outgrow the gate's own limit (1,024 bytes).

Reported by an attacker's pass: every path a call gave the gate was short, but each
call made 400 nested folders and moved the previous chain inside the new one with
`os.rename`; seven calls left a tree 2,800 levels deep, and another tool nested
250-character names past the kernel's 4,096-character path limit. Such a tree
broke every walk of the tenant's files: `roost forget` could never finish, `roost
backup` and `export` crashed or left files out, an upload answered 500. The gate
now moves a folder only when every path in it stays within the limit at its new
place (`PathGate._fits`); files and short moves are unchanged.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from forge.pathgate import PathDenied, PathGate
from forge.pathnames import MAX_PATH_BYTES
from forge.runner import SandboxRunner
from tests.forge.helpers import tool

aio = pytest.mark.asyncio(loop_scope="module")


def _names(root: Path) -> list[str]:
    return sorted(os.listdir(root))


def _chain(root: Path, name: str, levels: int) -> Path:
    path = root.joinpath(name, *(["d"] * levels))
    path.mkdir(parents=True)
    return path


def test_a_folder_moves_when_its_paths_stay_short(tmp_path: Path) -> None:
    _chain(tmp_path, "a", 10)
    (tmp_path / "b").mkdir()
    gate = PathGate(tmp_path)
    gate.rename("a", "b/a")
    assert (tmp_path / "b" / "a").joinpath(*["d"] * 10).is_dir()
    gate.rename("b/a", "c")  # shallower: always fine
    assert (tmp_path / "c" / "d").is_dir()


def test_a_folder_that_would_outgrow_the_limit_stays(tmp_path: Path) -> None:
    inner = 400  # "a/d/d/...": 1 + 2 * 400 characters
    _chain(tmp_path, "a", inner)
    deep = _chain(tmp_path, "b", inner)
    gate = PathGate(tmp_path)
    target = "/".join(["b", *["d"] * inner, "a"])
    with pytest.raises(PathDenied, match=f"longer than {MAX_PATH_BYTES} bytes"):
        gate.rename("a", target)
    assert (tmp_path / "a").is_dir() and not (deep / "a").exists()


def test_the_edge_with_short_names(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "f").write_text("x")
    gate = PathGate(tmp_path)
    base = "/".join(["x" * 100] * 9)  # 908 characters
    gate.mkdir(base, parents=True)
    room = MAX_PATH_BYTES - len(base) - 1  # the folder's name at the target, then "/f"
    ok = base + "/" + "n" * (room - 2)
    assert len(ok) + 2 == MAX_PATH_BYTES
    gate.rename("src", ok)
    gate.rename(ok, "src")
    with pytest.raises(PathDenied):
        gate.rename("src", ok + "n")
    assert (tmp_path / "src" / "f").read_text() == "x"


def test_a_wide_folder_is_walked_with_one_descriptor(tmp_path: Path) -> None:
    """The walk holds one folder open at a time: a call's 64 descriptors are enough for
    a folder of any width or depth."""
    for i in range(300):
        _chain(tmp_path / "wide", f"k{i}", 3)
    gate = PathGate(tmp_path)
    before = len(os.listdir("/proc/self/fd"))
    gate.rename("wide", "moved")
    assert len(os.listdir("/proc/self/fd")) == before
    assert len(list((tmp_path / "moved").iterdir())) == 300


DEEPEN = tool(
    'chain = "/".join(["d"] * 300)\n'
    'os.makedirs("D%d/%s" % (i, chain))\n'
    "if i > 0:\n"
    '    os.rename("D%d" % (i - 1), "D%d/%s/D%d" % (i, chain, i - 1))\n'
    "return i",
    "i: int",
    "import os",
)


@aio
# the reported tool nested 400 folders a call; 300 (599 characters a chain) keep the test
# short and still put the second move past the limit (3 + 599 + 3 + 599)
async def test_the_reported_attack_stops_at_the_second_call(
    runner: SandboxRunner, workspace: Path
) -> None:
    first = await runner.run(DEEPEN, {"i": 0}, workspace)
    assert first.ok, first
    second = await runner.run(DEEPEN, {"i": 1}, workspace)
    assert not second.ok
    assert f"longer than {MAX_PATH_BYTES} bytes" in second.error_message
    assert (workspace / "D0").is_dir()  # not moved
    assert not (workspace / "D1").joinpath(*["d"] * 300, "D0").exists()


EMOJI_TREE = tool(
    'names = ["\\U0001F600" * 63] * 15 + ["\\U0001F600" * 61]\n'
    'os.makedirs("/".join(names))\n'
    'with open("/".join([*names, "f"]), "w") as f:\n'
    '    f.write("x")\n'
    "return 1",
    "",
    "import os",
)


@aio
async def test_the_limit_counts_bytes_as_the_kernel_does(
    runner: SandboxRunner, workspace: Path
) -> None:
    """1,023 characters of 4-byte emoji (4,041 bytes) passed a limit counted in
    characters, and with the workspace's own path the file's path was past PATH_MAX:
    `roost backup` could not copy it, on every run (an attacker's pass)."""
    res = await runner.run(EMOJI_TREE, {}, workspace)
    assert not res.ok and f"1-{MAX_PATH_BYTES} bytes" in res.error_message, res
    assert _names(workspace) == []  # refused before anything was made


def test_a_folder_of_long_names_counts_their_bytes(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / ("é" * 127)).write_text("x")  # 254 bytes, 127 characters
    gate = PathGate(tmp_path)
    base = "/".join(["x" * 100] * 7)  # 706 bytes
    gate.mkdir(base, parents=True)
    with pytest.raises(PathDenied, match=f"longer than {MAX_PATH_BYTES} bytes"):
        gate.rename("src", base + "/" + "m" * 100)  # 807 + 1 + 254 bytes, 934 characters
    gate.rename("src", base + "/" + "m" * 50)  # 757 + 1 + 254 = 1,012 bytes
