"""The steering cache's patched trees against a fresh walk, under random edits.

`SteeringCache` keeps a resolved tree and, when only included files' texts
changed (naming the same `@refs`), replaces their parts instead of walking the
tree again. Seeded random edits of a nested tree near its cap: texts changed
in place and replaced (the same refs, other refs, longer and shorter, across the
cap both ways), a file deleted or made a directory, a directory on the way made
a link to a copy, a new file where a missing include pointed. After each, the
cached tree (over an inotify-watched cache, and a stat-checked one) must equal a
fresh `resolve` with nothing cached. No clock, no sleep.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from bridge.core.dirwatch import DirWatch
from bridge.core.filecache import FileCache
from bridge.loadout.steering import SteeringCache, operator_confinement, resolve

NAMES = ("a", "b", "c", "d", "e")
CAP = 1_400


class Tree:
    def __init__(self, home: Path, seed: int) -> None:
        self.home = home
        self.rng = random.Random(seed)
        self.n = 0
        (home / "docs").mkdir(parents=True)
        (home / "STEERING.md").write_text("Top. @docs/a.md @docs/b.md @docs/x.md\n")
        for name in NAMES:
            self.write(home / "docs" / f"{name}.md", self.body())

    def body(self) -> str:
        self.n += 1
        refs = " ".join(f"@{n}.md" for n in self.rng.sample(("c", "d", "e", "y"), 2))
        words = "rule " * self.rng.choice((3, 10, 40, 90))
        return f"Rule v{self.n}: {words}\nsee {refs}\n"

    def write(self, path: Path, text: str) -> None:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)

    def edit(self) -> str:
        rng = self.rng
        path = self.home / "docs" / f"{rng.choice((*NAMES, 'x', 'y'))}.md"
        op = rng.randrange(10)
        if op < 4 and path.is_file():  # the same refs, another text
            text = path.read_text()
            head, _, refs = text.rpartition("see ")
            self.n += 1
            words = "rule " * rng.choice((1, 10, 40, 90))
            new = f"Rule v{self.n}: {words}\nsee {refs}" if head else text + "more\n"
            if op < 2:
                self.write(path, new)
            else:
                with open(path, "w") as fh:  # in place
                    fh.write(new)
            return f"text of {path.name}"
        if op < 6 and not path.is_dir():
            self.write(path, self.body())  # other refs, likely
            return f"rewrote {path.name}"
        if op == 6 and path.is_file():
            path.unlink()
            return f"deleted {path.name}"
        if op == 7 and not path.exists():
            path.mkdir()
            return f"made {path.name} a directory"
        if op == 8 and path.is_dir() and not path.is_symlink():
            path.rmdir()
            return f"removed directory {path.name}"
        if op == 9:
            docs, copy = self.home / "docs", self.home / f"copy{self.n}"
            if docs.is_symlink():
                target = Path(os.readlink(docs))
                docs.unlink()
                shutil.copytree(target, docs, symlinks=True)
                return "docs a directory again"
            shutil.copytree(docs, copy, symlinks=True)
            shutil.rmtree(docs)
            docs.symlink_to(copy)
            return "docs a link to a copy"
        return "nothing"


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("watched", [True, False])
def test_a_patched_tree_equals_a_fresh_walk(tmp_path: Path, seed: int, watched: bool) -> None:
    home = tmp_path / "home"
    tree = Tree(home, seed)
    watch = DirWatch.open((str(tmp_path),)) if watched else None
    if watched and watch is None:
        pytest.skip("no inotify on a local file system here")
    files = FileCache(watch=watch)
    cache = SteeringCache(files, CAP)
    conf = operator_confinement(home)
    top = home / "STEERING.md"
    try:
        for step in range(150):
            what = tree.edit()
            with files.batch():
                got = cache.text(top, conf)
            fresh = resolve(top, conf, CAP, FileCache().read)[0]
            assert got == fresh, f"step {step}: {what}"
    finally:
        if watch is not None:
            watch.close()


def test_a_text_edit_reads_only_the_changed_file(tmp_path: Path) -> None:
    """The same refs in another text: one file read, not the tree walked again."""
    home = tmp_path / "home"
    Tree(home, 7)
    files = FileCache()
    cache = SteeringCache(files, 45_000)
    conf = operator_confinement(home)
    top = home / "STEERING.md"
    cache.text(top, conf)
    path = home / "docs" / "a.md"
    refs = path.read_text().rpartition("see ")[2]
    path.write_text(f"Rewritten, longer than before by far.\nsee {refs}")
    before = files.reads
    text = cache.text(top, conf)
    assert files.reads == before + 1
    assert "Rewritten, longer" in text
    assert text == resolve(top, conf, 45_000, FileCache().read)[0]


@pytest.mark.parametrize("watched", [True, False])
def test_a_directory_made_a_link_to_a_copy_walks_again(tmp_path: Path, watched: bool) -> None:
    """The same files, the same texts, through a link: their real paths (so their labels)
    changed, which a patch cannot see in the texts."""
    home = tmp_path / "home"
    (home / "docs").mkdir(parents=True)
    (home / "STEERING.md").write_text("Top. @docs/a.md\n")
    (home / "docs" / "a.md").write_text("A rules\n")
    watch = DirWatch.open((str(tmp_path),)) if watched else None
    files = FileCache(watch=watch)
    cache = SteeringCache(files, 45_000)
    conf = operator_confinement(home)
    top = home / "STEERING.md"
    try:
        assert "Contents of docs/a.md" in cache.text(top, conf)
        shutil.copytree(home / "docs", home / "copy")
        shutil.rmtree(home / "docs")
        (home / "docs").symlink_to(home / "copy")
        got = cache.text(top, conf)
        assert got == resolve(top, conf, 45_000, FileCache().read)[0]
        assert "Contents of copy/a.md" in got
    finally:
        if watch is not None:
            watch.close()
