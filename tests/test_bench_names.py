"""The bench scripts stay runnable: a package, no name that shadows a module, a quick mode each.

`make bench` once died because `bench/telegram.py`, run as `python bench/X.py`,
shadowed python-telegram-bot for every script in the folder. Scripts now run
as `python -m bench.NAME`; these checks keep a name from ever colliding with a
module importable in this venv (or the standard library) again, and keep every
script's `--quick` mode (what CI runs through `make bench-quick`) present.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"

# Scripts other engineers own and are changing in this wave (issue 26): the
# rename of telegram.py and the quick modes of these land with them. strict:
# once one is fixed, its entry here must go (the xfail then fails).
PENDING_QUICK: set[str] = set()
PENDING_RENAME: set[str] = set()


def _modules() -> list[Path]:
    return sorted(p for p in BENCH.glob("*.py") if not p.stem.startswith("_"))


def _is_script(tree: ast.Module) -> bool:
    """True when the module has an `if __name__ == "__main__":` block."""
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            left, right = node.test.left, node.test.comparators
            if (
                isinstance(left, ast.Name)
                and left.id == "__name__"
                and len(right) == 1
                and isinstance(right[0], ast.Constant)
                and right[0].value == "__main__"
            ):
                return True
    return False


def _has_quick(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.Constant) and n.value == "--quick" for n in ast.walk(tree))


def _scripts() -> list[Path]:
    return [p for p in _modules() if _is_script(ast.parse(p.read_text()))]


def _mark(name: str, pending: set[str], why: str) -> pytest.MarkDecorator | tuple[()]:
    return pytest.mark.xfail(strict=True, reason=why) if name in pending else ()


def test_bench_is_a_package() -> None:
    assert (BENCH / "__init__.py").is_file()
    assert (BENCH / "__main__.py").is_file()
    assert str(BENCH) not in sys.path


def test_the_runner_runs_every_script() -> None:
    from bench.__main__ import scripts

    assert scripts() == [p.stem for p in _scripts()]
    assert len(scripts()) >= 20  # a broken finder must not pass by finding nothing


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, id=p.stem, marks=_mark(p.stem, PENDING_RENAME, "renamed by its owner"))
        for p in _modules()
    ],
)
def test_no_bench_module_shadows_an_importable_one(path: Path) -> None:
    name = path.stem
    assert name not in sys.stdlib_module_names, f"bench/{name}.py shadows the stdlib {name}"
    spec = importlib.util.find_spec(name)
    assert spec is None, f"bench/{name}.py shadows {spec.origin if spec else name}"


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, id=p.stem, marks=_mark(p.stem, PENDING_QUICK, "quick mode by its owner"))
        for p in _scripts()
    ],
)
def test_every_bench_script_has_a_quick_mode(path: Path) -> None:
    assert _has_quick(ast.parse(path.read_text())), f"bench/{path.stem}.py has no --quick"


def test_the_shadow_check_sees_a_real_collision() -> None:
    """The check itself: a name of an installed library is found (so a bench named so fails)."""
    assert importlib.util.find_spec("aiohttp") is not None
    assert "json" in sys.stdlib_module_names


def test_the_pending_lists_name_only_scripts_that_exist() -> None:
    """A renamed or removed script leaves the lists above (nothing is excused by a stale name)."""
    names = {p.stem for p in _modules()}
    assert names >= PENDING_RENAME
    assert names >= PENDING_QUICK
