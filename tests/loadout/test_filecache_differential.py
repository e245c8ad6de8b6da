"""The inotify-watched file cache against the files themselves, under random changes.

Seeded random atomic saves, writes in place (the same size too), deletions,
renames between two watched directories, new names, and symbolic links
swapped (pointing outside the watched root, where the targets grow at every
write). After each change every answer of the cache, and every recorded
computation's proof (`still`, `changed_texts` patched with the texts it
names), must be what a fresh read says, inside a `batch` too. No clock, no sleep.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import pytest

from bridge.core import dirwatch
from bridge.core.dirwatch import DirWatch
from bridge.core.filecache import FileCache, Reads, sig

NAMES = [f"n{i}.md" for i in range(6)]


def fresh_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def fresh_list(path: str) -> tuple[str, ...]:
    try:
        return tuple(sorted(os.listdir(path)))
    except FileNotFoundError:
        return ()


class World:
    """Two watched directories and one outside the watch, changed at random."""

    def __init__(self, base: Path, rng: random.Random) -> None:
        self.rng = rng
        self.root = base / "home"
        self.dirs = [str(self.root / "a"), str(self.root / "b")]
        self.outside = base / "outside"
        for d in (*self.dirs, str(self.outside)):
            os.makedirs(d)
        self.n = 0
        self.grown = 0  # the length of the next outside write: never the same twice
        for d in self.dirs:
            for name in NAMES[:3]:
                self.save(os.path.join(d, name))

    def paths(self) -> list[str]:
        return [os.path.join(d, name) for d in self.dirs for name in NAMES]

    def text(self) -> str:
        self.n += 1
        return f"v{self.n % 7} " * self.rng.randint(1, 3)  # sizes and texts repeat

    def save(self, path: str) -> None:
        tmp = f"{path}.{self.n}.tmp"
        with open(tmp, "w") as fh:
            fh.write(self.text())
        os.replace(tmp, path)

    def change(self) -> None:
        rng = self.rng
        path = rng.choice(self.paths())
        op = rng.randrange(7)
        if op == 0:
            self.save(path)
        elif op == 1 and os.path.isfile(path) and not os.path.islink(path):
            with open(path, "r+") as fh:  # in place, often the same size
                fh.write(self.text()[:3])
        elif op == 2 and os.path.lexists(path):
            os.unlink(path)
        elif op == 3 and os.path.lexists(path):
            os.replace(path, rng.choice(self.paths()))
        elif op == 4:  # a link swapped in, to a file outside the watch
            target = self.outside / rng.choice(NAMES[:2])
            self.grown += 1
            target.write_text("o" * self.grown)
            tmp = f"{path}.{self.n}.link"
            self.n += 1
            os.symlink(target, tmp)
            os.replace(tmp, path)
        elif op == 5:  # a target outside written (linked to or not)
            self.grown += 1
            (self.outside / rng.choice(NAMES[:2])).write_text("o" * self.grown)
        else:
            self.save(path)


def record(cache: FileCache, world: World, which: list[str]) -> tuple[Reads, dict[str, object]]:
    answers: dict[str, object] = {}
    with cache.recording() as reads:
        answers[world.dirs[0]] = cache.listdir(world.dirs[0])
        for p in which:
            answers[p] = cache.read(p)
    return reads, answers


def fresh(world: World, which: list[str]) -> dict[str, object]:
    out: dict[str, object] = {world.dirs[0]: fresh_list(world.dirs[0])}
    out.update((p, fresh_text(p)) for p in which)
    return out


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[World, FileCache]]:
    base = Path(os.path.realpath(tmp_path))
    world = World(base, random.Random(0))
    watch = DirWatch.open((str(world.root),))
    if watch is None:
        pytest.skip("no inotify on a local file system here")
    yield world, FileCache(watch=watch)
    watch.close()


@pytest.mark.parametrize("seed", range(6))
def test_the_cache_answers_what_a_fresh_read_says(
    seed: int, watched: tuple[World, FileCache], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dirwatch, "_GONE_MAX", 5, raising=False)  # forgotten often
    world, cache = watched
    world.rng = random.Random(seed)
    every = world.paths()
    texts_of = every[: len(every) // 2]  # in `a`: its listing and its names
    still, still_answers = record(cache, world, every)
    changed, changed_answers = record(cache, world, texts_of)
    for step in range(300):
        for _ in range(world.rng.randint(1, 3)):
            world.change()
        # every other step inside a batch (one look at the queue: the changes before it)
        batch: AbstractContextManager[None] = cache.batch() if step % 2 else nullcontext()
        with batch:
            for p in world.rng.sample(every, 4):
                assert cache.read(p) == fresh_text(p), (seed, step, p)
                assert cache.stat_key(p) == sig(p), (seed, step, p)
            d = world.rng.choice(world.dirs)
            assert cache.listdir(d) == fresh_list(d), (seed, step, d)
        if cache.still(still):
            assert still_answers == fresh(world, every), (seed, step)
        else:
            still, still_answers = record(cache, world, every)
        texts = cache.changed_texts(changed)
        if texts is None:
            changed, changed_answers = record(cache, world, texts_of)
        else:
            changed_answers.update(texts)
            assert changed_answers == fresh(world, texts_of), (seed, step, texts)
