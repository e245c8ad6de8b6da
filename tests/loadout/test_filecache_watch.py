"""The inotify-watched file cache: no `stat` for an unchanged file, every change seen.

Real files in a temporary directory and a real inotify instance; each change is
made, then read back at once (no waiting: the kernel queues the event before the
change returns).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.core.dirwatch import IN_Q_OVERFLOW, DirWatch
from bridge.core.filecache import FileCache, sig

pytestmark = pytest.mark.skipif(
    DirWatch.open((os.getcwd(),)) is None, reason="no inotify on a local file system here"
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    real = Path(os.path.realpath(tmp_path)) / "home"
    (real / "tenants" / "alice" / "memory").mkdir(parents=True)
    return real


@pytest.fixture
def cache(root: Path) -> Iterator[FileCache]:
    watch = DirWatch.open((str(root),))
    assert watch is not None
    yield FileCache(watch=watch)
    watch.close()


def test_an_unchanged_file_costs_no_stat(root: Path, cache: FileCache) -> None:
    f = root / "tenants" / "alice" / "memory" / "a.md"
    f.write_text("one")
    assert cache.read(f) == "one"
    checked = cache.stats
    for _ in range(5):
        assert cache.read(f) == "one"
        assert cache.stat_key(f) == sig(f)
        assert cache.listdir(f.parent) == ("a.md",)
    assert cache.stats == checked + 2  # the file's key and the listing, once each


def test_every_kind_of_change_is_seen_at_once(root: Path, cache: FileCache) -> None:
    mdir = root / "tenants" / "alice" / "memory"
    f = mdir / "a.md"
    assert cache.read(f) is None  # missing, then created
    f.write_text("one")
    assert cache.read(f) == "one"
    with open(f, "r+") as fh:  # same size, in place
        fh.write("two")
    assert cache.read(f) == "two"
    tmp = mdir / ".a.md.tmp"
    tmp.write_text("three")
    os.replace(tmp, f)  # the atomic write
    assert cache.read(f) == "three"
    os.chmod(f, 0o000)
    os.chmod(f, 0o600)
    assert cache.stat_key(f) == sig(f)
    f.unlink()
    assert cache.read(f) is None
    assert cache.listdir(mdir) == ()
    (mdir / "b.md").write_text("b")
    assert cache.listdir(mdir) == ("b.md",)


def test_a_directory_on_the_way_renamed_is_seen(root: Path, cache: FileCache) -> None:
    f = root / "tenants" / "alice" / "memory" / "a.md"
    f.write_text("alice's")
    assert cache.read(f) == "alice's"
    os.rename(root / "tenants", root / "old-tenants")
    (root / "tenants" / "alice" / "memory").mkdir(parents=True)
    f.write_text("new")
    assert cache.read(f) == "new"
    os.rename(root / "tenants" / "alice", root / "alice-was")
    assert cache.read(f) is None


def test_a_missing_directory_created_later_is_listed(root: Path, cache: FileCache) -> None:
    skills = root / "tenants" / "alice" / "skills"
    assert cache.listdir(skills) == ()
    assert cache.listdir(skills) == ()
    skills.mkdir()
    (skills / "s.md").write_text("x")
    assert cache.listdir(skills) == ("s.md",)


def test_links_and_files_outside_the_roots_are_checked_with_stat(
    root: Path, cache: FileCache, tmp_path: Path
) -> None:
    outside = Path(os.path.realpath(tmp_path)) / "outside.md"
    outside.write_text("v1")
    mdir = root / "tenants" / "alice" / "memory"
    (mdir / "link.md").symlink_to(outside)
    os.link(outside, mdir / "hard.md")
    assert cache.read(mdir / "link.md") == "v1"
    assert cache.read(mdir / "hard.md") == "v1"
    assert cache.read(outside) == "v1"
    with open(outside, "w") as fh:  # a change reported to another directory only
        fh.write("v2, longer")
    assert cache.read(mdir / "link.md") == "v2, longer"
    assert cache.read(mdir / "hard.md") == "v2, longer"
    assert cache.read(outside) == "v2, longer"


def test_a_lost_queue_changes_every_generation(root: Path) -> None:
    watch = DirWatch.open((str(root),))
    assert watch is not None
    d = str(root / "tenants")
    before = watch.generation(d)
    watch._events(struct.pack("iIII", -1, IN_Q_OVERFLOW, 0, 0))
    after = watch.generation(d)
    assert before is not None and after is not None and after != before
    watch.close()
    assert watch.generation(d) is None  # closed: callers stat again


def test_a_closed_watch_leaves_the_cache_correct(root: Path) -> None:
    watch = DirWatch.open((str(root),))
    cache = FileCache(watch=watch)
    f = root / "x.md"
    f.write_text("one")
    assert cache.read(f) == "one"
    assert watch is not None
    watch.close()
    f.write_text("two!")
    assert cache.read(f) == "two!"


def test_a_directory_key_follows_its_entries(root: Path, cache: FileCache) -> None:
    vault = root / "tenants" / "alice" / "vault"
    vault.mkdir()
    before = cache.stat_key(vault)
    assert cache.stat_key(vault) == before == sig(vault)
    (vault / "TOKEN").write_text("x")  # the directory's mtime moves; its parent hears nothing
    assert cache.stat_key(vault) == sig(vault) != before


def test_a_file_written_beside_it_costs_no_stat(root: Path, cache: FileCache) -> None:
    """Each entry has its own generation: roost.db's log written next to STEERING.md
    (every turn) does not make STEERING.md checked again; STEERING.md written does."""
    steering, log = root / "STEERING.md", root / "roost.db-wal"
    steering.write_text("rules")
    assert cache.read(steering) == "rules"
    checked = cache.stats
    for i in range(5):
        with open(log, "a") as fh:
            fh.write(f"page {i}")
        assert cache.read(steering) == "rules"
        assert cache.stat_key(steering) == sig(steering)
    assert cache.stats == checked + 1  # the key, once; no read was checked again
    with open(steering, "r+") as fh:  # same size, in place
        fh.write("RULES")
    assert cache.read(steering) == "RULES"


def test_a_recording_still_holds_until_one_of_its_files_changes(
    root: Path, cache: FileCache
) -> None:
    mdir = root / "tenants" / "alice" / "memory"
    (mdir / "a.md").write_text("a")
    with cache.recording() as reads:
        assert cache.listdir(mdir) == ("a.md",)
        assert cache.read(mdir / "a.md") == "a"
        assert cache.read(mdir / "b.md") is None
    (root / "roost.db-wal").write_text("elsewhere")
    assert cache.still(reads)
    (mdir / "b.md").write_text("b")  # a missing file comes
    assert not cache.still(reads)


def test_a_dangling_link_is_checked_until_its_target_elsewhere_appears(
    root: Path, cache: FileCache, tmp_path: Path
) -> None:
    """A dangling link's target lives in a directory nobody watches: its own directory's
    entries vouch for nothing (the target appearing there raises no event here)."""
    memory = root / "tenants" / "alice" / "memory"
    target = tmp_path / "elsewhere" / "notes.md"
    (memory / "link.md").symlink_to(target)
    assert cache.stat_key(memory / "link.md") is None
    assert cache.real_path(str(memory / "link.md"), depend=True) == str(target)
    target.parent.mkdir()
    target.write_text("now here")
    assert cache.stat_key(memory / "link.md") == sig(target)


def test_a_missing_name_in_a_watched_directory_is_its_own_real_path_without_a_lookup(
    root: Path, cache: FileCache
) -> None:
    """A missing name in a watched directory: its real path is itself while the
    directory's entries stay still; a link made there under that name is seen."""
    memory = root / "tenants" / "alice" / "memory"
    missing = str(memory / "steer.md")
    assert cache.stat_key(missing) is None
    looked: list[str] = []

    def resolve(path: str) -> str:
        looked.append(path)
        return os.path.realpath(path)

    with cache.recording() as reads:
        assert cache.real_path(missing, resolve, depend=True) == missing
    assert looked == [] and cache.still(reads)
    (root / "real.md").write_text("x")
    (memory / "steer.md").symlink_to(root / "real.md")
    assert not cache.still(reads)
    assert cache.real_path(missing, resolve, depend=True) == str(root / "real.md")
