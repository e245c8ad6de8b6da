"""The watch takes the queued events with as few looks as it can, and still all of them.

A call that sees an event looks at the queue once and reads; it reads again only while a
read fills its buffer. No clock and no sleep: the events are made before each call.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.core import dirwatch
from bridge.core.dirwatch import DirWatch

pytestmark = pytest.mark.skipif(
    DirWatch.open((os.getcwd(),)) is None, reason="no inotify on a local file system here"
)


@pytest.fixture
def real(tmp_path: Path) -> Path:
    return Path(os.path.realpath(tmp_path))


@pytest.fixture
def watch(real: Path) -> Iterator[DirWatch]:
    w = DirWatch.open((str(real),))
    assert w is not None
    yield w
    w.close()


def counted(watch: DirWatch) -> list[int]:
    """The watch's looks at its queue, counted."""
    looks = [0]
    ready = watch._ready

    def look() -> bool:
        looks[0] += 1
        return ready()

    watch._ready = look  # type: ignore[method-assign]
    return looks


@pytest.mark.parametrize("ask", ["generations", "name_generation", "moved"])
def test_a_change_is_seen_after_one_look(real: Path, watch: DirWatch, ask: str) -> None:
    """A file written, then each kind of call: the change is seen, with one look at the
    queue (then a read), not the look, another look and a look after the read."""
    d = str(real)
    before = watch.generations(d)
    assert before is not None
    stamp = (d, "", before[0])
    looks = counted(watch)
    (real / "note.md").write_text("x")
    if ask == "generations":
        now = watch.generations(d)
        assert now is not None and now[0] != before[0]
    elif ask == "name_generation":
        assert watch.name_generation(d, "note.md") != before[0]
    else:
        assert watch.moved((stamp,)) == {stamp}
    assert looks[0] == 1
    looks[0] = 0
    assert watch.generations(d) == watch.generations(d)  # nothing queued: a look each
    assert looks[0] == 2


@pytest.mark.parametrize("buffer", [None, 1024])
def test_more_events_than_one_read_holds_are_all_taken(
    real: Path, watch: DirWatch, buffer: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events past what one read holds (a 64 KiB read, and a 1 KiB one, where a read that
    holds four events leaves less room than the largest event) are taken by the same
    call: the next call, with nothing changed between, answers the same."""
    if buffer is not None:
        monkeypatch.setattr(dirwatch, "_READ_SIZE", buffer)
    d = str(real)
    before = watch.generation(d)
    count = 40 if buffer else 400  # 224 bytes an event, two or three events a file
    for n in range(count):
        (real / f"{n:04d}{'x' * 196}").write_text("x")
    first = watch.generation(d)
    assert before is not None and first is not None and first > before
    assert watch.generation(d) == first
    changes = watch.entry_changes(d, before)
    assert changes is None or len(changes[1]) == min(count, 256)


def test_a_look_whose_event_another_took_reads_nothing_and_answers(
    real: Path, watch: DirWatch
) -> None:
    """A look saw an event, but another thread took it before the lock: the read finds
    the queue empty, and the answer is the generation as it is."""
    d = str(real)
    (real / "a.md").write_text("x")
    now = watch.generations(d)
    watch._ready = lambda: True  # type: ignore[method-assign]
    assert watch.generations(d) == now
    assert watch.name_generation(d, "a.md") is not None
