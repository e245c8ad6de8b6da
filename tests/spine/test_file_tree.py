"""`bridge.types.file_tree`: walking and removing trees `os.walk` and `shutil.rmtree` cannot.

An attacker's pass built, through a saved tool, a tree 2,800 levels deep (Python's
recursion limit ends `os.walk` and `shutil.rmtree` near 1,000) and one whose paths
were longer than the kernel's 4,096 characters (`os.walk` skips those without a
word). Both kinds are built here with descriptors (no path string could name
their depths) and walked, measured and removed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bridge.core.quota import ENTRY_BYTES, measure
from bridge.types.file_tree import TreeChanged, remove_tree, walk

DEEP = 3_000  # levels: past Python's recursion limit (1,000)
LONG_NAME = "n" * 250
LONG = 20  # levels of 250-character names: past PATH_MAX (4,096)


@pytest.fixture(autouse=True)
def _removed(tmp_path: Path) -> Iterator[None]:
    """pytest removes old temporary folders with `shutil.rmtree`, which recurses: the
    deep trees made here are removed here."""
    yield
    for path in list(tmp_path.iterdir()):
        remove_tree(path)


def build(root: Path, names: list[str], data: bytes = b"bottom") -> None:
    """Folders `names` nested below `root`, a file `bottom.txt` in the last one."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in names:
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        out = os.open("bottom.txt", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd)
        os.write(out, data)
        os.close(out)
    finally:
        os.close(fd)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("names", [["d"] * DEEP, [LONG_NAME] * LONG], ids=["deep", "long"])
def test_every_entry_is_walked_with_one_descriptor(tmp_path: Path, names: list[str]) -> None:
    build(tmp_path, names)
    fds, deepest = open_fds(), 0
    entries = 0
    for entry in walk(tmp_path):
        entries += 1
        deepest = max(deepest, len(entry.parts))
        assert open_fds() <= fds + 1
        if entry.name == "bottom.txt":
            with os.fdopen(entry.open(), "rb") as fh:
                assert fh.read() == b"bottom"
    assert entries == len(names) + 1 and deepest == len(names) + 1
    assert open_fds() == fds


def test_entries_come_in_name_order_folders_first_and_pruned_ones_stay_closed(
    tmp_path: Path,
) -> None:
    for rel in ("b/x.txt", "a/y.txt", "a/skip/z.txt", "c.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(rel)
    (tmp_path / "link").symlink_to(tmp_path / "a")
    rels = [e.rel for e in walk(tmp_path, prune=lambda e: e.name == "skip")]
    assert rels == ["a", "b", "c.txt", "link", "a/skip", "a/y.txt", "b/x.txt"]
    assert not next(e for e in walk(tmp_path) if e.name == "link").is_dir()  # never followed


def test_an_unreadable_folder_is_reported_not_skipped_silently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "shut" / "in").mkdir(parents=True)
    (tmp_path / "shut" / "in" / "f").write_text("x")
    scandir = os.scandir

    def refusing(fd: Any = ".") -> Any:  # as a folder of mode 000 does (for root too)
        if isinstance(fd, int) and os.readlink(f"/proc/self/fd/{fd}").endswith("/shut"):
            raise PermissionError(13, "Permission denied")
        return scandir(fd)

    monkeypatch.setattr(os, "scandir", refusing)
    with pytest.raises(PermissionError):
        list(walk(tmp_path))
    skipped: list[tuple[str, OSError]] = []
    assert [e.rel for e in walk(tmp_path, skipped=skipped)] == ["shut"]
    assert [rel for rel, _ in skipped] == ["shut"]
    monkeypatch.undo()  # before the clean-up walks it


def test_a_folder_moved_during_the_walk_ends_it(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    build(tmp_path / "a", ["x", "y"])
    (tmp_path / "b").mkdir()
    with pytest.raises(TreeChanged):
        for entry in walk(tmp_path):
            if entry.name == "bottom.txt":  # inside a/x/y: move a/x away meanwhile
                os.rename(tmp_path / "a" / "x", tmp_path / "b" / "x")


@pytest.mark.parametrize("names", [["d"] * DEEP, [LONG_NAME] * LONG], ids=["deep", "long"])
def test_remove_tree_removes_any_depth_and_length(tmp_path: Path, names: list[str]) -> None:
    top = tmp_path / "top"
    top.mkdir()
    build(top, names)
    (top / "side.txt").write_text("x")
    (top / "link").symlink_to(tmp_path)  # removed, never followed
    fds = open_fds()
    remove_tree(top)
    assert not top.exists() and open_fds() == fds
    assert list(tmp_path.iterdir()) == []
    remove_tree(top)  # gone: no error


@pytest.mark.parametrize("names", [["d"] * DEEP, [LONG_NAME] * LONG], ids=["deep", "long"])
def test_the_quota_counts_what_lies_deep(tmp_path: Path, names: list[str]) -> None:
    """Before, the long tree's first path past PATH_MAX raised ENAMETOOLONG out of the
    quota's walk: every upload of the tenant answered 500."""
    build(tmp_path, names, b"x" * 100_000)
    assert measure((tmp_path,)) == len(names) * ENTRY_BYTES + 100_000
