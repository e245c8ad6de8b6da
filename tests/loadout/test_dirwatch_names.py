"""The names a directory watch remembers: the ones that exist, not every one it saw.

Driven by atomic saves (a temporary name written, then renamed over the file):
no clock, no sleep. The limits are made small so that a few thousand saves go
past them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.core import dirwatch
from bridge.core.dirwatch import DirWatch
from bridge.core.filecache import FileCache

pytestmark = pytest.mark.skipif(
    DirWatch.open((os.getcwd(),)) is None, reason="no inotify on a local file system here"
)


@pytest.fixture
def mdir(tmp_path: Path) -> Path:
    real = Path(os.path.realpath(tmp_path)) / "memory"
    real.mkdir()
    return real


@pytest.fixture
def watch(mdir: Path) -> Iterator[DirWatch]:
    w = DirWatch.open((str(mdir),))
    assert w is not None
    yield w
    w.close()


def save(path: Path, text: str, n: int) -> None:
    tmp = path.parent / f".{path.name}.{n}.tmp"
    tmp.write_text(text)
    os.replace(tmp, path)


def test_saves_do_not_make_the_files_beside_them_start_again(
    mdir: Path, watch: DirWatch, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dirwatch, "_NAMES_MAX", 500)
    monkeypatch.setattr(dirwatch, "_GONE_MAX", 64, raising=False)
    kept, busy = mdir / "kept.md", mdir / "busy.md"
    watch.generation(str(mdir))  # watched from here
    save(kept, "kept", 0)  # named by an event: it has its own generation
    cache = FileCache(watch=watch)
    assert cache.read(kept) == "kept"
    gen = watch.name_generation(str(mdir), "kept.md")
    stats = cache.stats
    for n in range(2000):  # each save leaves a temporary name behind
        save(busy, f"busy {n}", n)
        assert watch.name_generation(str(mdir), "kept.md") == gen
    assert cache.read(kept) == "kept"
    assert cache.read(busy) == "busy 1999"
    assert cache.stats == stats + 1  # busy's, once: kept needed none
    remembered = sum(len(names) for names in watch._names.values())
    assert remembered <= 2 + 64


def test_a_removed_name_forgotten_is_not_vouched_for(
    mdir: Path, watch: DirWatch, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dirwatch, "_GONE_MAX", 8, raising=False)
    cache = FileCache(watch=watch)
    quiet, gone = mdir / "quiet.md", mdir / "gone.md"
    quiet.write_text("quiet")
    gone.write_text("one")
    watch.generation(str(mdir))  # watched from here: neither named by an event yet
    assert cache.read(quiet) == "quiet"
    assert cache.read(gone) == "one"  # vouched for by the directory's first generation
    with cache.recording() as reads:
        cache.read(gone)
    gone.unlink()
    for n in range(20):  # its removal is forgotten with the temporary names
        save(mdir / "busy.md", str(n), n)
    assert not cache.still(reads)
    assert cache.read(gone) is None
    gone.write_text("two")
    assert cache.read(gone) == "two"
    assert cache.read(quiet) == "quiet"


def test_a_listing_follows_the_entries_without_listing_again(
    mdir: Path, watch: DirWatch, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = FileCache(watch=watch)
    save(mdir / "a.md", "a", 0)
    listed = cache.listdir(mdir)
    assert listed == ("a.md",)
    calls = []
    real = os.listdir

    def counted(path: str) -> list[str]:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(os, "listdir", counted)
    save(mdir / "a.md", "again", 1)  # a temporary name came and went: the same names
    assert cache.listdir(mdir) is listed
    save(mdir / "b.md", "b", 2)
    (mdir / "a.md").rename(mdir / "c.md")
    assert cache.listdir(mdir) == ("b.md", "c.md")
    assert calls == []
    monkeypatch.setattr(dirwatch, "_LOG_MAX", 4)
    for n in range(10):  # more than the log remembers: listed again
        save(mdir / f"d{n}.md", "d", n)
    assert cache.listdir(mdir) == tuple(sorted(real(mdir)))
    assert calls == [str(mdir)]


def test_a_change_made_inside_a_batch_is_seen_after_it(mdir: Path, watch: DirWatch) -> None:
    cache = FileCache(watch=watch)
    a, b = mdir / "a.md", mdir / "b.md"
    save(a, "one", 0)
    save(b, "one", 1)
    assert cache.read(a) == cache.read(b) == "one"
    save(a, "two", 2)  # before the batch: seen inside it
    with cache.batch(), cache.recording() as reads:
        assert cache.read(a) == "two"
        save(b, "two", 3)  # inside: this batch may answer as of its start
        cache.read(b)
    assert not cache.still(reads)
    assert cache.read(b) == "two"


def test_named_since_says_which_names_moved_and_when_it_cannot_know(
    mdir: Path, watch: DirWatch, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The names an event named after a generation (the only ones whose own generation
    may have moved); None once more happened than is remembered, or the directory's
    own event moved every name."""
    monkeypatch.setattr(dirwatch, "_NAMED_MAX", 16)
    for i in range(5):
        save(mdir / f"t{i}.md", "x", i)
    since = watch.generation(str(mdir))
    assert since is not None
    assert watch.named_since(str(mdir), since) == set()
    before = {f"t{i}.md": watch.name_generation(str(mdir), f"t{i}.md") for i in range(5)}
    save(mdir / "t3.md", "y", 99)
    told = watch.named_since(str(mdir), since)
    assert told is not None and "t3.md" in told and "t1.md" not in told
    for name, gen in before.items():  # every name not told of kept its generation
        if name not in told:
            assert watch.name_generation(str(mdir), name) == gen
    assert watch.name_generation(str(mdir), "t3.md") != before["t3.md"]
    for n in range(20):  # past what is remembered
        save(mdir / "t0.md", "z", 100 + n)
    assert watch.named_since(str(mdir), since) is None
    later = watch.generation(str(mdir))
    assert later is not None
    os.chmod(mdir, 0o755)  # the directory's own event: every name's generation moved
    assert watch.named_since(str(mdir), later) is None
