"""Attacks on the os / os.path / pathlib shims (issue 11): every way out of the
workspace through them is refused with the gate's clear error, and nothing
outside is read, listed, created, moved or deleted. Landlock still runs here,
so each case also asserts the *gate's* message (layer 4), not only a failure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from forge.pathgate import PathDenied, PathGate
from forge.runner import SandboxRunner
from tests.forge.helpers import tool

aio = pytest.mark.asyncio(loop_scope="module")
IMPORTS = "import os\nimport os.path\nfrom pathlib import Path"


@pytest.fixture
def outside(workspace: Path) -> Path:
    """A secret next to the workspace, a symlink and a hard link to it inside."""
    out = workspace.parent / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("TOP SECRET")
    (workspace / "ok.txt").write_text("fine")
    os.symlink(out, workspace / "link")
    os.symlink(out / "secret.txt", workspace / "file_link")
    os.link(out / "secret.txt", workspace / "hard.txt")
    return out


ESCAPES = {
    "absolute /etc/passwd via Path": "return Path('/etc/passwd').read_text()",
    "absolute /etc/passwd via exists": "return os.path.exists('/etc/passwd')",
    "/proc/self/environ": "return Path('/proc/self/environ').read_bytes()",
    "/proc via listdir": "return os.listdir('/proc/self')",
    "dotdot read": "return open(os.path.join('..', 'outside', 'secret.txt')).read()",
    "dotdot listdir": "return os.listdir('..')",
    "dotdot iterdir": "return [str(p) for p in Path('..').iterdir()]",
    "dotdot getsize": "return os.path.getsize('../outside/secret.txt')",
    "dotdot resolve": "return str(Path('../outside').resolve())",
    "abspath then open": "return open(os.path.abspath('../outside/secret.txt')).read()",
    "symlinked dir read": "return Path('link/secret.txt').read_text()",
    "symlinked dir listdir": "return os.listdir('link')",
    "symlinked dir scandir": "return [e.name for e in os.scandir('link')]",
    "symlinked dir walk start": "return list(os.walk('link'))",
    "symlinked dir glob": "return [str(p) for p in Path('link').glob('*')]",
    "symlinked file stat": "return Path('file_link').stat().st_size",
    "symlinked file exists": "return os.path.exists('file_link')",
    "hard link read": "return Path('hard.txt').read_text()",
    "hard link stat": "return os.path.getsize('hard.txt')",
    "glob dotdot": "return [str(p) for p in Path('.').glob('**/../../outside/*')]",
    "glob parent": "return [str(p) for p in Path('.').glob('../*')]",
    "glob absolute": "return [str(p) for p in Path('.').glob('/etc/*')]",
    "Path absolute glob base": "return [str(p) for p in Path('/etc').glob('*')]",
    "other tenant absolute": "return os.listdir(os.path.join(os.getcwd(), '..', 'outside'))",
    "rename out": "os.rename('ok.txt', '../outside/stolen.txt')",
    "rename out absolute": "os.replace('ok.txt', '/tmp/stolen.txt')",
    "rename in": "os.rename('../outside/secret.txt', 'mine.txt')",
    "Path rename out": "Path('ok.txt').rename(Path('..') / 'outside' / 'x.txt')",
    "rename through symlinked dir": "os.rename('ok.txt', 'link/planted.txt')",
    "makedirs outside": "os.makedirs('../outside/evil', exist_ok=True)",
    "makedirs absolute": "os.makedirs('/tmp/evil-shim', exist_ok=True)",
    "mkdir through symlink": "Path('link/evil').mkdir(parents=True)",
    "remove outside": "os.remove('../outside/secret.txt')",
    "unlink through symlink": "Path('link/secret.txt').unlink()",
    "write through symlink": "Path('link/planted.txt').write_text('x')",
    "touch outside": "Path('/tmp/evil-touch').touch()",
    "rmdir outside": "os.rmdir('../outside')",
}


@aio
@pytest.mark.parametrize("body", ESCAPES.values(), ids=ESCAPES.keys())
async def test_escapes_through_the_shims_are_refused(
    body: str, runner: SandboxRunner, workspace: Path, outside: Path
) -> None:
    res = await runner.run(tool(body, imports=IMPORTS), {}, workspace)
    assert not res.ok, res.result
    assert res.error_kind == "denied" or "PermissionError" in res.error_message, res.error_message
    assert "TOP SECRET" not in res.error_message
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "TOP SECRET"
    assert not {"evil-shim", "evil-touch"} & set(os.listdir("/tmp"))
    assert (workspace / "ok.txt").read_text() == "fine"


@aio
async def test_walk_and_rglob_never_descend_into_a_symlink(
    runner: SandboxRunner, workspace: Path, outside: Path
) -> None:
    body = (
        "walked = [[r, sorted(d), sorted(f)] for r, d, f in os.walk('.')]\n"
        "found = sorted(str(p) for p in Path('.').rglob('*'))\n"
        "return [walked, found]"
    )
    res = await runner.run(tool(body, imports=IMPORTS), {}, workspace)
    assert res.ok, res.error_message
    walked, found = res.result
    assert walked == [[".", [], ["file_link", "hard.txt", "link", "ok.txt"]]]
    assert "secret.txt" not in str(res.result)
    assert found == ["file_link", "hard.txt", "link", "ok.txt"]


@aio
@pytest.mark.parametrize(
    "body", ["return len(list(os.walk('.')))", "return len(list(Path('.').rglob('*.txt')))"]
)
async def test_a_very_deep_tree_is_bounded(
    body: str, runner: SandboxRunner, workspace: Path
) -> None:
    deep = workspace.joinpath(*["d"] * 80)
    deep.mkdir(parents=True)
    (deep / "x.txt").write_text("x")
    res = await runner.run(tool(body, imports=IMPORTS), {}, workspace)
    assert not res.ok and res.error_kind == "denied"
    assert "directories deep" in res.error_message


@aio
async def test_a_huge_directory_is_bounded(runner: SandboxRunner, workspace: Path) -> None:
    many = workspace / "many"
    many.mkdir()
    for i in range(10_001):
        (many / str(i)).touch()
    res = await runner.run(tool("return len(os.listdir('many'))", imports=IMPORTS), {}, workspace)
    assert not res.ok and "more than 10000 entries" in res.error_message


def test_a_str_subclass_cannot_steer_the_gate(workspace: Path) -> None:
    """A tool class derived from str could override split()/startswith(); the
    gate works on an exact copy of the text, so the override is never called."""

    class Sneaky(str):
        def split(self, *args: object) -> list[str]:  # type: ignore[override]
            return ["/etc/passwd"]

        def startswith(self, *args: object) -> bool:  # type: ignore[override]
            return False

    gate = PathGate(workspace)
    with pytest.raises(FileNotFoundError):
        gate.open(Sneaky("harmless.txt"))
    with pytest.raises(PathDenied):
        gate.stat(Sneaky("/etc/passwd"))
