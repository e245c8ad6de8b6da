"""`EnsuredDirs`: a tenant's tree is made sure of once and then vouched for by inotify,
never past a change: a leaf removed, renamed or replaced is made again by the next call,
and one tenant's tree never answers for another's."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.core.dirs_memo import EnsuredDirs
from bridge.core.dirwatch import DirWatch
from bridge.types.tenant_dirs import TenantDirs


@pytest.fixture
def watch(tmp_path: Path) -> Iterator[DirWatch]:
    opened = DirWatch.open((str(tmp_path.resolve()),))
    if opened is None:
        pytest.skip("no inotify here")
    yield opened
    opened.close()


def stats(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    isdir = os.path.isdir

    def counted(path: str | os.PathLike[str]) -> bool:
        seen.append(str(path))
        return isdir(path)

    monkeypatch.setattr(os.path, "isdir", counted)
    return seen


def test_an_unchanged_tree_costs_no_stat(
    tmp_path: Path, watch: DirWatch, monkeypatch: pytest.MonkeyPatch
) -> None:
    dirs = TenantDirs.of(tmp_path.resolve(), "t1")
    ensured = EnsuredDirs(watch)
    ensured.ensure(dirs)
    seen = stats(monkeypatch)
    for _ in range(3):
        assert ensured.ensure(dirs) is dirs
    assert seen == []
    assert all(Path(leaf).is_dir() for leaf in dirs.leaves)


@pytest.mark.parametrize("leaf", ["memory", "skills", "tools", "vault", "outputs"])
def test_a_removed_leaf_is_made_again(tmp_path: Path, watch: DirWatch, leaf: str) -> None:
    dirs = TenantDirs.of(tmp_path.resolve(), "t1")
    ensured = EnsuredDirs(watch)
    ensured.ensure(dirs)
    ensured.ensure(dirs)
    path: Path = getattr(dirs, leaf)
    path.rmdir()
    ensured.ensure(dirs)
    assert path.is_dir()


def test_a_moved_parent_or_whole_tree_is_made_again(tmp_path: Path, watch: DirWatch) -> None:
    dirs = TenantDirs.of(tmp_path.resolve(), "t1")
    ensured = EnsuredDirs(watch)
    ensured.ensure(dirs)
    dirs.workspace.rename(tmp_path / "elsewhere")  # outputs/ goes with it, its watch too
    ensured.ensure(dirs)
    assert dirs.outputs.is_dir()
    shutil.rmtree(dirs.root)
    ensured.ensure(dirs)
    assert all(Path(leaf).is_dir() for leaf in dirs.leaves)
    assert (dirs.root.stat().st_mode & 0o777) == 0o700


def test_one_tenants_tree_never_answers_for_anothers(tmp_path: Path, watch: DirWatch) -> None:
    ensured = EnsuredDirs(watch)
    ensured.ensure(TenantDirs.of(tmp_path.resolve(), "t1"))
    other = TenantDirs.of(tmp_path.resolve(), "t2")
    ensured.ensure(other)
    assert all(Path(leaf).is_dir() for leaf in other.leaves)


def test_outside_the_watch_every_call_checks(tmp_path: Path, watch: DirWatch) -> None:
    elsewhere = tmp_path.resolve() / "x"
    elsewhere.mkdir()
    outside = DirWatch.open((str(elsewhere),))  # the tree is not under its root
    assert outside is not None
    try:
        dirs = TenantDirs.of(tmp_path.resolve(), "t1")
        ensured = EnsuredDirs(outside)
        ensured.ensure(dirs)
        dirs.outputs.rmdir()
        ensured.ensure(dirs)
        assert dirs.outputs.is_dir()
    finally:
        outside.close()
