"""An operator command reading the tools' usage while the daemon runs breaks nothing.

A newcomer ran `roost tools list` beside a running daemon (s35 N1): every personal
tool call then failed with `sqlite3.OperationalError: disk I/O error` until a
restart. The daemon keeps a connection open to `usage.sqlite` (the catalog's
reader) and counts each call through the forge's usage store, which opened and
closed a descriptor of the file to make it 0600 first. Closing any descriptor of a
file drops every POSIX lock the process holds on it, so the next process to close
its last connection (the operator's command) believed itself the last one and
deleted the -wal and -shm files the daemon still had open. Here the daemon's side
runs in this process, the operator's command in a real second process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.core.filecache import FileCache
from bridge.personal_tools.catalog import ToolCatalog
from forge.usage import FILENAME, UsageStore

OUTSIDE = """
import sys
from pathlib import Path
from forge.usage import UsageStore
store = UsageStore(Path(sys.argv[1]))
print(store.all()["wordcount"].calls)
if sys.argv[2] == "write":
    store.record("wordcount", True, 2)
"""


def outside(tools: Path, what: str) -> int:
    """`roost tools list` (read) or a second instance counting a call (write)."""
    done = subprocess.run(
        [sys.executable, "-c", OUTSIDE, str(tools), what],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    return int(done.stdout)


def test_a_reader_in_another_process_leaves_the_daemons_database_whole(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    store = UsageStore(tools)
    store.record("wordcount", True, 1)
    catalog = ToolCatalog(FileCache(), lambda: 0)
    assert catalog.usage(tools)["wordcount"].calls == 1  # the daemon's kept reader
    store.record("wordcount", True, 1)  # the daemon counts a call

    assert outside(tools, "read") == 2  # the operator lists the tools
    assert (tools / f"{FILENAME}-wal").exists() and (tools / f"{FILENAME}-shm").exists()

    store.record("wordcount", True, 3)  # the daemon's next calls are counted
    assert catalog.usage(tools)["wordcount"].calls == 3
    assert outside(tools, "write") == 3  # another process counts one
    assert catalog.usage(tools)["wordcount"].calls == 4  # and the daemon sees it
    assert store.get("wordcount").calls == 4
    assert os.stat(tools / FILENAME).st_mode & 0o777 == 0o600


def test_the_usage_file_is_still_tightened_and_never_followed(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / FILENAME).touch(mode=0o644)
    os.chmod(tools / FILENAME, 0o644)
    UsageStore(tools).record("wordcount", True, 1)
    assert os.stat(tools / FILENAME).st_mode & 0o777 == 0o600

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / FILENAME).touch()
    os.chmod(elsewhere / FILENAME, 0o644)  # whatever the umask
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / FILENAME).symlink_to(elsewhere / FILENAME)
    with pytest.raises(OSError):
        UsageStore(linked).record("wordcount", True, 1)
    assert os.stat(elsewhere / FILENAME).st_mode & 0o777 == 0o644
    assert (elsewhere / FILENAME).stat().st_size == 0
