"""The os / os.path / pathlib shims (issue 11): the linter binds exactly the
allowed import forms, the shims offer exactly the names forge.modules lists,
and what stays out of `os` says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from forge.lint import lint
from forge.modules import SHIMMED, build_proxies
from forge.pathgate import PathGate
from forge.runner import SandboxRunner
from forge.shims import SHIM_NAMES, build_shims, shim_import
from forge.shims.common import ShimModule
from tests.forge.helpers import tool

aio = pytest.mark.asyncio(loop_scope="module")


@pytest.mark.parametrize(
    "imports",
    [
        "import os",
        "import os.path",
        "from os import path",
        "import pathlib",
        "from pathlib import Path",
        "from os.path import join, exists",
        "import os.path as osp",
    ],
)
def test_the_natural_import_forms_lint_clean(imports: str) -> None:
    assert lint(tool("return 1", imports=imports)) == []


@pytest.mark.parametrize(
    "imports",
    [
        "from os import environ",
        "from os import system",
        "import os.environ",
        "import shutil",
        "import glob",
        "from os import *",
        "from pathlib import os",
        "import posixpath",
    ],
)
def test_everything_else_of_os_stays_refused_by_the_linter(imports: str) -> None:
    codes = {f.code for f in lint(tool("return 1", imports=imports))}
    assert codes & {"F010", "F011", "F012"}, codes


def test_the_shims_offer_exactly_the_listed_names(tmp_path: Path) -> None:
    shims = build_shims(PathGate(tmp_path))
    for module, names in SHIMMED.items():
        for name in names:
            getattr(shims[module], name)
    assert "os" not in build_proxies()  # never the real module


def test_the_shims_are_built_on_the_first_import_of_one_and_only_then(tmp_path: Path) -> None:
    """A call's shims are made when it first imports os, os.path or pathlib (most
    tools import none); every later import answers the same modules."""
    assert set(SHIMMED) == SHIM_NAMES == set(build_shims(PathGate(tmp_path)))
    built: list[dict[str, ShimModule]] = []

    def build() -> dict[str, ShimModule]:
        built.append(build_shims(PathGate(tmp_path)))
        return built[-1]

    def inner(name: str, *args: object) -> str:
        return f"inner {name}"

    hook = shim_import(build, inner)
    assert hook("json") == "inner json" and built == []
    pathlib = hook("pathlib", None, None, ("Path",), 0)
    assert len(built) == 1 and pathlib is built[0]["pathlib"]
    assert hook("os.path") is built[0]["os"]  # `import os.path` binds `os`
    assert hook("os.path", None, None, ("join",), 0) is built[0]["os.path"]
    assert hook("os") is built[0]["os"] and len(built) == 1
    assert hook("os", None, None, (), 1) == "inner os"  # a relative import is not a shim


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("return os.environ['HOME']", "declare a secret"),
        ("return os.getenv('PATH')", "declare a secret"),
        ("return os.system('id')", "cannot run programs"),
        ("return os.popen('id').read()", "cannot run programs"),
        ("return os.execv('/bin/sh', ['sh'])", "cannot run programs"),
        ("return os.fork()", "cannot start processes"),
        ("return os.kill(1, 9)", "cannot signal"),
        ("return os.chmod('x', 0o777)", "cannot change permissions"),
        ("return os.symlink('/etc', 'e')", "cannot create links"),
        ("return os.link('a', 'b')", "cannot create links"),
        ("return os.open('x', 0)", "only workspace file operations"),
        ("return os.path.realpath('x')", "links are never followed"),
    ],
)
@aio
async def test_what_stays_out_of_os_says_why(
    body: str, message: str, runner: SandboxRunner, workspace: Path
) -> None:
    res = await runner.run(tool(body, imports="import os"), {}, workspace)
    assert not res.ok and "AttributeError" in res.error_message
    assert message in res.error_message


@aio
async def test_a_shim_path_works_with_the_open_builtin_and_json(
    runner: SandboxRunner, workspace: Path
) -> None:
    body = (
        "p = Path('a') / 'b.json'\np.parent.mkdir()\n"
        "with open(p, 'w') as f:\n    json.dump({'k': 1}, f)\n"
        "return [json.load(open(p)), p.suffix, p.stem, str(p.with_suffix('.txt')),"
        " sorted(str(x) for x in Path('.').iterdir())]"
    )
    res = await runner.run(
        tool(body, imports="import json\nfrom pathlib import Path"), {}, workspace
    )
    assert res.ok, res.error_message
    assert res.result == [{"k": 1}, ".json", "b", "a/b.txt", ["a"]]


@aio
async def test_path_cannot_be_subclassed_by_a_tool(runner: SandboxRunner, workspace: Path) -> None:
    body = "class P(Path):\n    def read_text(self):\n        return 'x'\nreturn P('a').read_text()"
    res = await runner.run(tool(body, imports="from pathlib import Path"), {}, workspace)
    assert not res.ok and "cannot be subclassed" in res.error_message
