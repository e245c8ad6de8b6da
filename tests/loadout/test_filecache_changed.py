"""`FileCache.changed_texts`: which files of a recorded computation say something new,
so a memo of many files works out again only those; anything else that changed (a
listing, a stat key) asks for the whole computation again. With and without inotify."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.app.memory_notes import MemoryNotes, _text, _TopicTerms, render
from bridge.core.config_sections import MemorySettings
from bridge.core.dirwatch import DirWatch
from bridge.core.filecache import FileCache, Reads
from bridge.memory.store import MemoryStore, Provenance
from bridge.recall.notes import choose, score_notes
from bridge.types.messages import Inbound
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import TurnContext


@pytest.fixture(params=["watched", "stat-checked"])
def cache(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FileCache]:
    if request.param == "stat-checked":
        yield FileCache()
        return
    watch = DirWatch.open((os.path.realpath(tmp_path),))
    if watch is None:
        pytest.skip("no inotify on a local file system here")
    yield FileCache(watch=watch)
    watch.close()


def files(tmp_path: Path, n: int) -> list[Path]:
    out = []
    for i in range(n):
        f = Path(os.path.realpath(tmp_path)) / f"t{i}.md"
        f.write_text(f"text {i}")
        out.append(f)
    return out


def record(cache: FileCache, paths: list[Path]) -> Reads:
    with cache.recording() as reads:
        cache.listdir(paths[0].parent)
        for p in paths:
            cache.read(p)
    return reads


def replace(path: Path, text: str) -> None:
    """Written the way roost writes (a temporary file renamed over it)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def test_nothing_changed_is_an_empty_answer(cache: FileCache, tmp_path: Path) -> None:
    reads = record(cache, files(tmp_path, 3))
    assert cache.changed_texts(reads) == {}
    assert cache.still(reads)


def test_the_changed_files_and_their_texts_then_nothing(cache: FileCache, tmp_path: Path) -> None:
    paths = files(tmp_path, 5)
    reads = record(cache, paths)
    replace(paths[1], "new one")
    paths[3].write_text("new three, longer")
    assert not cache.still(reads)
    assert cache.changed_texts(reads) == {
        str(paths[1]): "new one",
        str(paths[3]): "new three, longer",
    }
    assert cache.changed_texts(reads) == {}  # the reads moved on to what the files say now
    assert cache.still(reads)


@pytest.mark.parametrize("how", ["added", "removed"])
def test_a_listing_that_changed_is_no_answer(cache: FileCache, tmp_path: Path, how: str) -> None:
    paths = files(tmp_path, 3)
    reads = record(cache, paths)
    if how == "added":
        (paths[0].parent / "t9.md").write_text("more")
    else:
        paths[2].unlink()
    assert cache.changed_texts(reads) is None
    assert not cache.still(reads)


def test_injection_after_a_topic_is_saved_reads_only_it_and_scores_as_from_scratch(
    cache: FileCache, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dirs = TenantDirs.of(Path(os.path.realpath(tmp_path)), "alice").ensure()
    store = MemoryStore(20_000, 4_000, 90)
    prov = Provenance("person", "web", "c1", "1")
    for i in range(6):
        store.save(dirs, f"topic {i}", "user", f"about {i}", f"plain body {i}", prov, 0.0)
    # the first overwrite makes memory/.history (a new entry: the topics are listed again)
    store.save(dirs, "topic 0", "user", "about 0", "plain body 0, again", prov, 0.0)
    notes = MemoryNotes(store, MemorySettings(inject_floor=0.2), files=cache)
    message = "where is the basil and the tomatoes"
    turn = TurnContext(dirs, Inbound("web", "local", "c1", message, "1"), lambda: 0.0)
    assert notes.note(turn) == ""
    whole: list[str] = []
    real = _TopicTerms._read_all
    monkeypatch.setattr(
        _TopicTerms, "_read_all", lambda self, d: whole.append(str(d)) or real(self, d)
    )
    steps = [("topic 2", "basil grows here"), ("topic 4", "tomatoes and basil"), ("topic 2", "x")]
    for step, (name, body) in enumerate(steps):
        store.save(dirs, name, "user", f"about {name}", body, prov, float(step))
        shown = notes.note(turn)
        assert whole == []  # only the saved topic was read and split again
        listed = [(t.name, _text(t)) for t in store.topics(dirs)]
        from_scratch = choose(score_notes(message, listed), 0.2, 1500)
        assert shown == render(from_scratch)
    assert "tomatoes and basil" in shown and "basil grows here" not in shown
