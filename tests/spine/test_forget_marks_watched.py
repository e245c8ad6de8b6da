"""The daemon's forgetting check (`ForgetMarks`) goes through its watched file cache, and a
marker written by another process refuses the very next message: the cache never answers
from a stale look at `forgetting/`.

The marker is written as `roost forget` writes it (a temporary file renamed into place), by a
separate Python process, between two messages; with a real inotify watch and without one.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bridge.app.build import Roost
from bridge.app.forget_marks import FOLDER, ForgetMarks, marker_path
from bridge.core.dirwatch import DirWatch
from bridge.core.filecache import FileCache
from tests.conftest import web_msg
from tests.fresh import python_c

WRITE = (
    "import os, sys; p = sys.argv[1]; t = p + '.tmp'; open(t, 'w').write('{}'); os.replace(t, p)"
)


def mark_elsewhere(path: Path) -> None:
    """Write the marker from another process, atomically, as `roost forget` does."""
    python_c(WRITE, str(path))


async def test_a_marker_made_by_another_process_refuses_the_next_message(
    roost: Roost, home: Path
) -> None:
    for i in range(3):  # the cache has looked at `forgetting/` and kept its answer
        assert (await roost.core.handle(web_msg(f"hello {i}", i))).kind == "answer"
    marker = marker_path(home, "local")
    mark_elsewhere(marker)
    refused = await roost.core.handle(web_msg("still there?", 10))
    assert refused.kind == "refusal" and "being deleted" in refused.text
    marker.unlink()
    assert (await roost.core.handle(web_msg("back", 11))).kind == "answer"


@pytest.fixture(params=["watched", "unwatched"])
def cache(request: pytest.FixtureRequest, tmp_path: Path) -> FileCache:
    if request.param == "unwatched":
        return FileCache()
    watch = DirWatch.open((os.path.realpath(tmp_path),))
    if watch is None:
        pytest.skip("no inotify on a local file system here")
    request.addfinalizer(watch.close)
    return FileCache(watch=watch)


def test_a_marker_is_seen_at_once_and_its_removal_too(tmp_path: Path, cache: FileCache) -> None:
    home = Path(os.path.realpath(tmp_path)) / "home"
    home.mkdir()
    marks = ForgetMarks(home, cache)
    assert (home / FOLDER).is_dir()
    assert not any(marks.barred("bob") for _ in range(3))
    mark_elsewhere(marker_path(home, "bob"))
    assert marks.barred("bob") and not marks.barred("alice")
    marker_path(home, "bob").unlink()
    assert not marks.barred("bob")
    assert not marks.barred("Not A Tenant!")  # no marker can name it


def test_the_folder_removed_and_made_again_is_still_watched(
    tmp_path: Path, cache: FileCache
) -> None:
    home = Path(os.path.realpath(tmp_path)) / "home"
    home.mkdir()
    marks = ForgetMarks(home, cache)
    assert not marks.barred("bob")
    (home / FOLDER).rmdir()
    assert not marks.barred("bob")
    (home / FOLDER).mkdir()
    mark_elsewhere(marker_path(home, "bob"))
    assert marks.barred("bob")
