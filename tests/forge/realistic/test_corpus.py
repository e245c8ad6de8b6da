"""The realistic corpus (issue 11): tools written the way models write them,
with `os`, `os.path`, `pathlib`, `json`, `csv` and `datetime`, run unchanged in
the sandbox and give what plain CPython gives in the same fresh workspace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forge.runner import SandboxRunner
from tests.forge.realistic.cases import CASES, Case, check_after, seed
from tests.fresh import python_c

aio = pytest.mark.asyncio(loop_scope="module")
IDS = [f"{c.tool}-{i}" for i, c in enumerate(CASES)]

# Runs one tool with real CPython, the workspace as the current directory.
REFERENCE = """
import json, sys
src, params = sys.argv[1], json.loads(sys.argv[2])
ns = {"__name__": "tool"}
exec(compile(open(src).read(), src, "exec"), ns)
print(json.dumps(ns["run"](**params)))
"""


def test_the_corpus_is_big_enough() -> None:
    assert len({c.tool for c in CASES}) >= 20


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_expected_results_are_what_cpython_gives(case: Case, tmp_path: Path) -> None:
    seed(tmp_path, case)
    src = str(Path(__file__).parent / "tools" / f"{case.tool}.py")
    out = python_c(REFERENCE, src, json.dumps(case.params), cwd=tmp_path, isolated=True)
    assert json.loads(out.stdout) == case.expected
    assert check_after(tmp_path, case) == case.after


@aio
@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_the_tool_runs_unchanged_in_the_sandbox(
    case: Case, runner: SandboxRunner, workspace: Path
) -> None:
    seed(workspace, case)
    res = await runner.run(case.source(), case.params, workspace)
    assert res.ok, f"{res.error_kind}: {res.error_message}"
    assert res.result == case.expected
    assert check_after(workspace, case) == case.after
