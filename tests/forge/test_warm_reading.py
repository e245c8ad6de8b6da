"""A waiting child also walks the reading path most tools take (forge.child
`_warm_reading`): the built-in open's io stack over stdin (/dev/null), a loop over
its lines, a csv.DictReader's rows, the guards' lookups and writes on plain dicts.

These tests show that it uses the call's own guards without changing anything a
call sees (its globals, builtins, guards), that it reads nothing (stdin is
/dev/null in a child; here too), and that in a real child it moves a CSV call's
page copies off the call's path (counted in page faults, never in time: it
ignores its errors, so only the counts show that it ran).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from forge.child import _warm_reading, prepare_call_globals
from forge.runner import SandboxRunner
from forge.warmup import prepare
from tests.forge.helpers import tool

CSV_BODY = """
totals = {}
with open(path, newline="") as f:
    for row in csv.DictReader(f):
        for key, value in row.items():
            totals[key] = totals.get(key, 0) + float(value)
return totals
"""


@pytest.fixture
def devnull_stdin() -> Iterator[None]:
    """fd 0 on /dev/null while the test runs, as in a sandbox child."""
    saved = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        yield
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(null)


def _snapshot(glb: dict[str, Any]) -> tuple[Any, ...]:
    """What a call could see of its globals: every name and the identity of its value."""
    builtins_ = glb["__builtins__"]
    guards = glb["_getattr_"].__self__
    return (
        sorted((k, id(v)) for k, v in glb.items()),
        sorted((k, id(v)) for k, v in builtins_.items()),
        set(guards.tool_classes),
        set(guards._passing),
    )


@pytest.mark.parametrize("with_file", [True, False])
def test_it_changes_nothing_a_call_sees(devnull_stdin: None, with_file: bool) -> None:
    """With the library file (a helper with read-only roots) or stdin (without)."""
    ctx, _ = prepare()
    where = ctx.warm_file if with_file else None
    if with_file and where is None:
        pytest.skip("no Landlock here: no read-only roots, no library file")
    pre = prepare_call_globals(ctx, dict(ctx.builtins))
    before = _snapshot(pre.globals)
    _warm_reading(pre.globals, where)  # called directly: an error here fails the test
    assert _snapshot(pre.globals) == before
    assert pre.sink.text() == ""
    assert os.lseek(0, 0, os.SEEK_CUR) == 0  # nothing read (and /dev/null has nothing)


def test_the_library_file_is_one_a_gate_opens_in_a_read_only_root() -> None:
    """Its descriptor is one of the read-only roots' (a child closes them all when its
    call arrives: nothing of the warm-up stays open for the call)."""
    ctx, _ = prepare()
    where = ctx.warm_file
    if where is None:
        pytest.skip("no Landlock here: no read-only roots, no library file")
    assert where.fd in ctx.read_fds
    assert os.path.samestat(os.fstat(where.fd), os.stat(where.root))
    st = os.stat(os.path.join(where.root, where.name))
    assert stat.S_ISREG(st.st_mode) and st.st_nlink == 1


@pytest.mark.asyncio(loop_scope="module")
async def test_a_csv_call_copies_fewer_pages_once_it_arrived(
    traced: SandboxRunner, workspace: Path
) -> None:
    """The tool stage of a CSV call in a warmed child (bench.sandbox's CSV tool):
    about 40 faults here, about 100 when the reading warm-up stops early (it ignores
    its errors) or is not there."""
    rows = "\n".join(f"{i},{i * 2},{i % 7}" for i in range(100))
    (workspace / "data.csv").write_text("a,b,c\n" + rows + "\n")
    src = tool(CSV_BODY, params="path: str", imports="import csv")
    first = len(traced.faults())
    for _ in range(9):
        res = await traced.run(src, {"path": "data.csv"}, workspace)
        assert res.ok, res
        assert res.result == {"a": 4950.0, "b": 9900.0, "c": float(sum(i % 7 for i in range(100)))}
    ran = sorted(r["ran"] - r["globals"] for r in traced.faults()[first:])
    assert ran[len(ran) // 2] < 70, ran
