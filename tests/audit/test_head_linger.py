"""The head's sync lingers: the puts of a burst of batches are covered by one sync."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from bridge.audit import head as head_module
from bridge.audit.head import HeadFile
from bridge.audit.store import read_head

DIGEST = "ab" * 32


def _head(tmp_path: Path, linger: float) -> tuple[HeadFile, int]:
    dir_fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    return HeadFile(tmp_path / "chain.head", dir_fd, None, linger=linger), dir_fd


def test_puts_during_the_linger_share_one_sync_and_close_does_not_wait_for_it(
    tmp_path: Path,
) -> None:
    """A linger far longer than the test: no sync can run before `close`, which ends the
    linger at once and syncs the last head, one sync for every put after the first."""
    heads, dir_fd = _head(tmp_path, linger=3600.0)
    try:
        heads.put(1, DIGEST)  # the new file: synced at once, inline
        assert heads.syncs == 1
        for seq in range(2, 12):
            heads.put(seq, DIGEST)
        assert heads.syncs == 1  # lingering
        heads.close()
        assert heads.syncs == 2  # one sync for the ten puts
        assert read_head(tmp_path / "chain.head") == {"seq": 11, "hash": DIGEST}
    finally:
        os.close(dir_fd)


def test_a_put_is_synced_after_the_linger_without_another_put(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced = threading.Event()
    real = head_module.HeadFile.sync

    def sync(self: HeadFile) -> None:
        real(self)
        if threading.current_thread().name == "head-sync":
            synced.set()

    monkeypatch.setattr(head_module.HeadFile, "sync", sync)
    heads, dir_fd = _head(tmp_path, linger=0.001)
    try:
        heads.put(1, DIGEST)
        heads.put(2, DIGEST)
        assert synced.wait(60)  # an upper bound only against a hang
        assert heads.syncs == 2
    finally:
        heads.close()
        os.close(dir_fd)


def test_a_crash_before_the_first_head_is_synced_leaves_no_head_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first head is made under a temporary name and renamed once synced: a crash
    in between leaves no `chain.head` (an empty one would keep the daemon from
    starting; no head at all `verify` reads as a chain whose head is behind)."""

    def crash(fd: int) -> None:
        raise OSError(5, "the machine stopped here")

    heads, dir_fd = _head(tmp_path, linger=3600.0)
    try:
        monkeypatch.setattr(head_module.os, "fdatasync", crash)
        with pytest.raises(OSError, match="stopped here"):
            heads.put(1, DIGEST)
        assert not (tmp_path / "chain.head").exists()
        monkeypatch.undo()
        heads.put(1, DIGEST)  # the next batch makes it
        assert read_head(tmp_path / "chain.head") == {"seq": 1, "hash": DIGEST}
        assert heads.syncs == 1
        assert [p.name for p in tmp_path.iterdir()] == ["chain.head"]
    finally:
        heads.close()
        os.close(dir_fd)
