"""The reading hint (forge.child_pool `ReadingHint`, issue 26): once a helper's
recent calls never named a way to read a file, its next waiting children leave
the reading path out of their warm-up (forge.child `_warm_reading`), and warm it
again from the first call that does. Only the warm-up changes: every call, read
or not, returns what it returns with every child (a traced call shows which kind
of child ran it)."""

from __future__ import annotations

import marshal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from forge.child import READY_NOT_READING
from forge.child_pool import QUIET_CALLS, ReadingHint, may_read
from forge.policy.compile import compile_tool
from forge.runner import SandboxRunner
from tests.forge.helpers import tool

CSV = tool(
    'totals = {}\nwith open(path, newline="") as f:\n'
    "    for row in csv.DictReader(f):\n"
    "        for key, value in row.items():\n"
    "            totals[key] = totals.get(key, 0) + float(value)\n"
    "return totals",
    params="path: str",
    imports="import csv",
)
SQUARE = tool("return n * n", params="n: int")
READERS = [
    CSV,
    tool("return os.listdir('.')", imports="import os"),
    tool("return os.path.exists('a')", imports="import os"),
    tool("return Path('a').read_text()", imports="from pathlib import Path"),
    tool("return pathlib.Path('a').exists()", imports="import pathlib"),
    tool("return listdir('.')"),
    tool("with open('a') as f:\n    return f.read()"),
    tool("return list(csv.reader(['a,b']))", imports="import csv"),
]
OTHERS = [
    SQUARE,
    tool("return {'pos': pos, 'close': close, 'opened': 1}", params="pos: int, close: str"),
    tool("return json.dumps({'path': 1})", imports="import json"),
    tool("return re.sub('opened', 'x', s)", params="s: str", imports="import re"),
]


@pytest.mark.parametrize("restricted", [True, False])
def test_it_tells_the_tools_that_read_from_the_others(restricted: bool) -> None:
    for src in READERS:
        assert may_read(marshal.dumps(compile_tool(src, restricted))), src
    for src in OTHERS:
        assert not may_read(marshal.dumps(compile_tool(src, restricted))), src


def test_it_stops_warming_the_reading_path_after_quiet_calls_only() -> None:
    reads = marshal.dumps(compile_tool(CSV, True))
    quiet = marshal.dumps(compile_tool(SQUARE, True))
    hint = ReadingHint()
    assert hint.reading
    for _ in range(QUIET_CALLS - 1):
        hint.note(quiet)
        assert hint.reading
    hint.note(quiet)
    assert not hint.reading
    hint.note(quiet)
    assert not hint.reading
    hint.note(reads)  # the first call that reads: warmed again at once
    assert hint.reading
    hint.note(quiet)
    assert hint.reading


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def traced() -> AsyncIterator[SandboxRunner]:
    r = SandboxRunner(trace=True)
    yield r
    await r.aclose()


def _not_reading(r: SandboxRunner) -> bool:
    """Whether the child of the last traced call left out the reading warm-up."""
    return READY_NOT_READING in r.faults()[-1]


@pytest.mark.asyncio(loop_scope="module")
async def test_every_call_returns_the_same_with_either_child(
    traced: SandboxRunner, workspace: Path
) -> None:
    rows = "\n".join(f"{i},{i * 2}" for i in range(50))
    (workspace / "data.csv").write_text("a,b\n" + rows + "\n")
    want = {"a": float(sum(range(50))), "b": float(sum(range(0, 100, 2)))}
    res = await traced.run(CSV, {"path": "data.csv"}, workspace)
    assert res.ok and res.result == want, res
    assert not _not_reading(traced)
    kinds = []
    for n in range(QUIET_CALLS + 12):  # the waiting children take their turns first
        res = await traced.run(SQUARE, {"n": n}, workspace)
        assert res.ok and res.result == n * n, res
        kinds.append(_not_reading(traced))
    # forked before the hint turned (the last quiet call's may be asked for after it)
    assert kinds[: QUIET_CALLS - 1] == [False] * (QUIET_CALLS - 1), kinds
    assert kinds[-1], kinds  # the quiet tenant's children no longer warm reading
    kinds = []
    for _ in range(12):
        res = await traced.run(CSV, {"path": "data.csv"}, workspace)
        assert res.ok and res.result == want, res  # whichever child ran it
        kinds.append(_not_reading(traced))
    assert kinds[0] and not kinds[-1], kinds  # a cold child first, warmed ones again
