"""The watch's look at its queue: a `poll` that keeps the GIL, and what it answers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.core import dirwatch
from bridge.core.dirwatch import DirWatch


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read, write = os.pipe()
    yield read, write
    os.close(read)
    os.close(write)


@pytest.mark.parametrize("native", [True, False])
def test_ready_says_whether_something_is_queued(
    pipe: tuple[int, int], native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Empty: False; a byte written: True until it is read (libc's `poll`, and the
    `select.poll` fallback where libc's cannot be had)."""
    if not native:

        def no_library(name: object) -> object:
            raise OSError("no such library")

        monkeypatch.setattr(dirwatch.ctypes, "PyDLL", no_library)
    read, write = pipe
    ready = dirwatch._readiness(read)
    assert ready() is False
    os.write(write, b"x")
    assert ready() is True
    os.read(read, 1)
    assert ready() is False


def test_a_failed_poll_reads_as_events_so_the_queue_is_drained(
    pipe: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """poll's -1 (a signal, EINTR) must not pass for a quiet queue."""

    class Failing:
        argtypes: object = None
        restype: object = None

        def __call__(self, *args: object) -> int:
            return -1

    class Library:
        poll = Failing()

    monkeypatch.setattr(dirwatch.ctypes, "PyDLL", lambda name: Library())
    assert dirwatch._readiness(pipe[0])() is True


@pytest.mark.skipif(
    DirWatch.open((os.getcwd(),)) is None, reason="no inotify on a local file system here"
)
def test_a_write_is_seen_by_the_next_call(tmp_path: Path) -> None:
    real = Path(os.path.realpath(tmp_path))
    watch = DirWatch.open((str(real),))
    assert watch is not None
    try:
        before = watch.generation(str(real))
        assert before is not None and watch.generation(str(real)) == before
        (real / "note.md").write_text("x")
        after = watch.generation(str(real))
        assert after is not None and after != before
    finally:
        watch.close()
