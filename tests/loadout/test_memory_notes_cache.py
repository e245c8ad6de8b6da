"""The memory injection reads and splits each topic file once per version of it,
and a topic that changed (or went) is scored on what it says now."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.app import memory_notes as notes_module
from bridge.app.memory_notes import MemoryNotes
from bridge.core.config_sections import MemorySettings
from bridge.core.filecache import FileCache
from bridge.memory.store import MemoryStore, Provenance
from bridge.types.tenant_dirs import TenantDirs

NOW = 1_800_000_000.0
PROV = Provenance("person", "web", "c1", "1")


def test_unchanged_topics_are_not_read_or_split_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    split: list[str] = []
    real = notes_module.note_terms

    def counting(name: str, text: str) -> frozenset[str]:
        split.append(name)
        return real(name, text)

    monkeypatch.setattr(notes_module, "note_terms", counting)
    dirs = TenantDirs.of(tmp_path, "alice").ensure()
    store = MemoryStore(20_000, 4_000, 90)
    store.save(dirs, "garden", "user", "the garden", "tomatoes and basil grow here", PROV, NOW)
    store.save(dirs, "bikes", "user", "the bikes", "a red bicycle with a basket", PROV, NOW)
    files = FileCache()
    notes = MemoryNotes(store, MemorySettings(inject_floor=0.3), files=files)

    first = notes.explain(dirs, "how are the tomatoes and the basil")
    assert [s.name for s in first.chosen] == ["garden"]
    reads, splits = files.reads, len(split)
    assert sorted(split) == ["bikes", "garden"]
    for _ in range(3):
        again = notes.explain(dirs, "how are the tomatoes and the basil")
        assert again.note == first.note
    assert (files.reads, len(split)) == (reads, splits)  # nothing read or split again

    store.save(dirs, "bikes", "user", "the bikes", "tomatoes and basil in the basket", PROV, NOW)
    changed = notes.explain(dirs, "how are the tomatoes and the basil")
    assert {s.name for s in changed.chosen} == {"garden", "bikes"}
    assert split[splits:] == ["bikes"]
    assert notes.explain(dirs, "a red bicycle").chosen == []  # the old text is gone

    # the same scores as reading every topic through the store and scoring from scratch
    listed = [(t.name, notes_module._text(t)) for t in store.topics(dirs)]
    message = "how are the tomatoes and the basil"
    assert notes.explain(dirs, message).scored == notes_module.score_notes(message, listed)


def test_a_turns_usage_record_is_vouched_for_by_the_watch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the watched cache, a turn whose injected topics were recorded within the hour
    makes no `stat` of the usage file; a rewrite by another process is still seen (the
    injection is recorded again)."""
    import json
    import os

    from bridge.core.dirwatch import DirWatch
    from bridge.memory import usage
    from bridge.types.messages import Inbound
    from bridge.types.tools import TurnContext

    watch = DirWatch.open((str(tmp_path),))
    if watch is None:
        pytest.skip("no inotify on a local file system here")
    dirs = TenantDirs.of(tmp_path, "alice").ensure()
    store = MemoryStore(20_000, 4_000, 90)
    store.save(dirs, "garden", "user", "the garden", "tomatoes and basil grow here", PROV, NOW)
    notes = MemoryNotes(store, MemorySettings(inject_floor=0.3), files=FileCache(watch=watch))
    path = dirs.memory / usage.FILENAME
    stats: list[str] = []
    real_stat = os.stat

    def counted(p: object, *args: object, **kwargs: object) -> os.stat_result:
        if str(p) == str(path):
            stats.append(str(p))
        return real_stat(p, *args, **kwargs)  # type: ignore[arg-type]

    def turn(minute: int) -> str:
        inbound = Inbound("web", "alice", "c1", "how are the tomatoes and the basil", "1")
        return notes.note(TurnContext(dirs, inbound, lambda: NOW + 60 * minute))

    try:
        assert "tomatoes and basil" in turn(0)
        assert json.loads(path.read_text())["garden"]["injected"] == int(NOW * 1000)
        monkeypatch.setattr(os, "stat", counted)
        for minute in range(1, 6):
            assert "tomatoes and basil" in turn(minute)
        assert stats == []  # the watch vouched for the file: no stat, no read
        path.write_text(json.dumps({"garden": {"injected": 0}}))  # another process
        turn(7)
        assert json.loads(path.read_text())["garden"]["injected"] == int((NOW + 420) * 1000)
    finally:
        watch.close()
