"""The escape suite, with all layers on. Sources: RestrictedPython advisories
(CVE-2023-37271 generator frames, CVE-2023-41039 str.format, CVE-2024-47532
AttributeError.obj, CVE-2025-22153 except*, CVE-2026-55830 positional-only
guard shadowing, CVE-2026-76825 string.Formatter), a public sandbox assessment
(module poisoning through `_write_`, `sys.modules` via module attributes), the
UIUCTF 2023 "rattler read" RestrictedPython jail (format-string RCE), and the
usual path traversal, link and resource-exhaustion tricks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from forge.runner import SandboxRunner
from tests.forge.helpers import tool
from tests.waits import HANG_S

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def _blocked(
    runner: SandboxRunner,
    src: str,
    ws: Path,
    kind: str,
    *,
    limit_s: float = HANG_S,  # a hang guard: the kind asked for comes long before it
    params: dict[str, object] | None = None,
) -> str:
    res = await runner.run(src, params or {}, ws, timeout_s=limit_s)
    assert not res.ok, res.result
    assert res.error_kind == kind, (res.error_kind, res.error_message)
    return res.error_message


@pytest.mark.parametrize(
    ("name", "body", "imports"),
    [
        ("subclasses walk", "return [].__class__.__base__.__subclasses__()", ""),
        (
            "generator frame CVE-2023-37271",
            "g = (i for i in [1])\nreturn g.gi_frame.f_back.f_globals",
            "",
        ),
        ("except* CVE-2025-22153", "try:\n    pass\nexcept* Exception:\n    pass", ""),
        (
            "string.Formatter CVE-2026-76825",
            "return Formatter().format('{0}', 1)",
            "from string import Formatter",
        ),
        ("subprocess import", "return subprocess.getoutput('id')", "import subprocess"),
        ("eval", "return eval('1+1')", ""),
        ("dunder builtins", "return __builtins__", ""),
        ("import via __import__", "return __import__('os')", ""),
        ("global", "global x\nx = 1", ""),
    ],
)
async def test_lint_blocks(
    runner: SandboxRunner, workspace: Path, name: str, body: str, imports: str
) -> None:
    await _blocked(runner, tool(body, imports=imports), workspace, "lint")


async def test_positional_only_guard_shadowing(runner: SandboxRunner, workspace: Path) -> None:
    src = tool("return 1") + "\ndef f(_getattr_, /):\n    return 1\n"
    await _blocked(runner, src, workspace, "lint")


@pytest.mark.parametrize(
    "body",
    [
        "return '{0.__class__.__mro__}'.format(1)",  # CVE-2023-41039
        "return '{0.real.__class__}'.format(1)",
        "return '{a.__globals__}'.format_map({'a': run})",  # rattler-read style
        "return '{0.gi_frame}'.format(i for i in [1])",
    ],
)
async def test_format_strings_cannot_reach_attributes(
    runner: SandboxRunner, workspace: Path, body: str
) -> None:
    msg = await _blocked(runner, tool(body), workspace, "runtime")
    assert "not accessible" in msg


async def test_attribute_error_obj(runner: SandboxRunner, workspace: Path) -> None:
    body = "try:\n    json.nothing\nexcept AttributeError as e:\n    return e.obj"
    msg = await _blocked(runner, tool(body, imports="import json"), workspace, "lint")
    assert "obj" in msg


async def test_module_poisoning_refused(runner: SandboxRunner, workspace: Path) -> None:
    body = "json.dumps = len\nreturn 1"
    msg = await _blocked(runner, tool(body, imports="import json"), workspace, "runtime")
    assert "may not modify" in msg


@pytest.mark.parametrize("attr", ["decoder", "sys", "re"])
async def test_modules_expose_only_listed_names(
    runner: SandboxRunner, workspace: Path, attr: str
) -> None:
    body = f"return str(json.{attr})"
    msg = await _blocked(runner, tool(body, imports="import json"), workspace, "runtime")
    assert "AttributeError" in msg


@pytest.mark.parametrize(
    "path", ["/etc/passwd", "../outside.txt", "/proc/self/environ", "sub/../../outside.txt"]
)
async def test_path_escapes_denied(runner: SandboxRunner, workspace: Path, path: str) -> None:
    (workspace.parent / "outside.txt").write_text("secret")
    src = tool("with open(p) as f:\n    return f.read()", params="p: str")
    await _blocked(runner, src, workspace, "denied", params={"p": path})


async def test_links_denied(runner: SandboxRunner, workspace: Path) -> None:
    outside = workspace.parent / "outside.txt"
    outside.write_text("secret")
    (workspace / "soft").symlink_to(outside)
    os.link(outside, workspace / "hard")
    src = tool("with open(p, 'w') as f:\n    f.write('pwned')", params="p: str")
    for name in ("soft", "hard"):
        await _blocked(runner, src, workspace, "denied", params={"p": name})
    assert outside.read_text() == "secret"


async def test_endless_loop(runner: SandboxRunner, workspace: Path) -> None:
    await _blocked(runner, tool("while True:\n    pass"), workspace, "timeout", limit_s=0.5)


async def test_long_c_call_is_killed(runner: SandboxRunner, workspace: Path) -> None:
    body = "return len(str(pow(7, 10 ** 9)))"
    await _blocked(runner, tool(body), workspace, "timeout", limit_s=0.5)


async def test_catastrophic_regex(runner: SandboxRunner, workspace: Path) -> None:
    body = "return bool(re.match('(a+)+$', 'a' * 64 + 'b'))"
    await _blocked(runner, tool(body, imports="import re"), workspace, "timeout", limit_s=0.5)


@pytest.mark.parametrize(
    "body",
    ["return len('a' * 10 ** 10)", "x = []\nwhile True:\n    x.append('a' * 10 ** 6)"],
)
async def test_memory_bombs(runner: SandboxRunner, workspace: Path, body: str) -> None:
    # only the memory limit can end it: the deadline (and the CPU limit it sets) is
    # the hang guard, so a machine however loaded still sees kind "memory"
    await _blocked(runner, tool(body), workspace, "memory", limit_s=HANG_S)


async def test_huge_print(runner: SandboxRunner, workspace: Path) -> None:
    await _blocked(runner, tool("while True:\n    print('x' * 1000)"), workspace, "output")


async def test_huge_result(runner: SandboxRunner, workspace: Path) -> None:
    await _blocked(runner, tool("return 'x' * 10 ** 7"), workspace, "output")


@pytest.mark.parametrize(
    "body",
    ["return {1, 2}", "return float('nan')", "return Thing()", "return open"],
)
async def test_non_json_results(runner: SandboxRunner, workspace: Path, body: str) -> None:
    src = tool(body) + "\nclass Thing:\n    pass\n"
    msg = await _blocked(runner, src, workspace, "output")
    assert "JSON" in msg


async def test_deep_recursion(runner: SandboxRunner, workspace: Path) -> None:
    src = tool("return f(0)") + "\ndef f(n):\n    return f(n + 1)\n"
    msg = await _blocked(runner, src, workspace, "runtime")
    assert "RecursionError" in msg


async def test_file_size_limit(runner: SandboxRunner, workspace: Path) -> None:
    body = (
        "with open('big.bin', 'wb') as f:\n    for i in range(40):\n        f.write(b'x' * 2 ** 20)"
    )
    msg = await _blocked(runner, tool(body), workspace, "quota")  # issue 21: kind quota
    assert "File too large" in msg


def _running(pid: int) -> bool:
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


async def test_helper_survives_everything(runner: SandboxRunner, workspace: Path) -> None:
    """The helper of the last escape test's workspace still runs, and calls work."""
    pid = runner.helper_pid()
    assert pid is not None
    assert _running(pid)
    res = await runner.run(tool("return 41 + 1"), {}, workspace)
    assert res.ok and res.result == 42


# session 30's attacker pass: `TypedDict`'s functional form took any string as a key,
# and `dataclass` pasted the keys into the text of the methods it execs
INJECTED = 'x"\\n raise ValueError(str(__import__("os").getpid()))#'


@pytest.mark.parametrize(
    "body",
    [
        f"dataclass(TypedDict('TD', {{{INJECTED!r}: int}}), init=False, eq=False)\nreturn 1",
        f"dataclass(init=False)(TypedDict('TD', {{{INJECTED!r}: int}}))\nreturn 1",
        f"T = TypedDict('TD', {{{INJECTED!r}: int}})\n"
        "class C(T):\n    pass\ndataclass(C)\nreturn 1",
        f"return TypedDict('TD', **{{{INJECTED!r}: int}})",
        "return TypedDict('TD', {'_hidden': int})",
        "return TypedDict('TD', {'class': int})",
        "return TypedDict('TD', {1: int})",
    ],
)
async def test_field_names_never_become_code(
    runner: SandboxRunner, workspace: Path, body: str
) -> None:
    imports = "from typing import TypedDict\nfrom dataclasses import dataclass"
    msg = await _blocked(runner, tool(body, imports=imports), workspace, "runtime")
    # a keyword name through `**` is refused at the call itself since session 32
    refusals = ("field names must be identifiers not starting with '_'", "may not pass this name")
    assert any(r in msg for r in refusals), msg


async def test_checked_dataclass_and_typeddict_still_work(
    runner: SandboxRunner, workspace: Path
) -> None:
    body = """
Movie = TypedDict('Movie', {'title': str, 'year': int})
class Film(TypedDict):
    title: str
@dataclass
class Point:
    x: int
    y: int = 2
@dataclass(frozen=True, order=True)
class Pair:
    a: int
    b: str
m = Movie(title='Up', year=2009)
return [m['year'], Film(title='x')['title'], repr(Point(1)), Pair(1, 'z') < Pair(2, 'a')]
"""
    imports = "from typing import TypedDict\nfrom dataclasses import dataclass"
    res = await runner.run(tool(body, imports=imports), {}, workspace)
    assert res.ok, res.error_message
    assert res.result == [2009, "x", "run.<locals>.Point(x=1, y=2)", True]


async def test_a_dict_that_iterates_one_way_and_copies_another_is_checked_as_copied(
    runner: SandboxRunner, workspace: Path
) -> None:
    """`dict(fields)` inside typing reads a subclass's `keys()` when it overrides
    `__iter__`: the check must see what typing sees. The linter refuses `__iter__`
    today (only `__init__` is allowed); the checked copy is the wall behind it."""
    body = f"""
class Two(dict):
    def __iter__(self):
        return iter(['fine'])
dataclass(TypedDict('TD', Two({{{INJECTED!r}: int}})), init=False, eq=False)
return 1
"""
    imports = "from typing import TypedDict\nfrom dataclasses import dataclass"
    res = await runner.run(tool(body, imports=imports), {}, workspace)
    assert not res.ok
    assert res.error_kind in ("lint", "compile") or "field names must be identifiers" in (
        res.error_message
    ), res
