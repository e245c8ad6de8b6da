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


def test_a_put_after_a_quiet_spell_is_synced_at_once_and_later_puts_do_not_wake_the_thread(
    tmp_path: Path,
) -> None:
    """At most one sync per linger: a put made a linger or more after the last sync is
    synced at once (no linger waited out first); the puts within the linger after it
    are covered by the next sync without waking the thread (it sleeps out the linger)."""
    now = [0.0]
    dir_fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    heads = HeadFile(tmp_path / "chain.head", dir_fd, None, linger=3600.0, clock=lambda: now[0])
    synced = threading.Event()
    real_sync = heads.sync

    def sync() -> None:
        real_sync()
        synced.set()

    heads.sync = sync  # type: ignore[method-assign]
    wakes = []
    real_notify = heads._wake.notify
    heads._wake.notify = lambda n=1: (wakes.append(n), real_notify(n))  # type: ignore[method-assign]
    try:
        heads.put(1, DIGEST)  # the new file: synced inline
        now[0] = 3600.0  # a linger later (the clock the thread reads)
        heads.put(2, DIGEST)
        assert synced.wait(60)  # at once, not after the (real) hour: 60 s bounds a hang only
        assert heads.syncs == 2 and len(wakes) <= 1  # 0: put before the thread first waited
        woken = len(wakes)
        for seq in range(3, 8):
            heads.put(seq, DIGEST)
        assert len(wakes) == woken  # the thread sleeps out the linger; no put woke it
        assert heads.syncs == 2
    finally:
        heads.close()  # ends the linger: the last head synced
        os.close(dir_fd)
    assert heads.syncs == 3
    assert read_head(tmp_path / "chain.head") == {"seq": 7, "hash": DIGEST}


def _asleep(heads: HeadFile) -> None:
    """Wait for the head's thread to wait for a put (a condition, not a time)."""
    while not heads._quiet:
        threading.Event().wait(0.001)


def test_a_deferred_put_after_a_quiet_spell_is_synced_by_its_caller_not_the_thread(
    tmp_path: Path,
) -> None:
    """The chain's writer puts with `defer`: a put after a quiet spell is synced at once
    on the writer's own thread when it settles it with nothing else queued (the quiet
    thread not woken); within the linger of that sync the next one is the thread's."""
    now = [0.0]
    dir_fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    heads = HeadFile(tmp_path / "chain.head", dir_fd, None, linger=3600.0, clock=lambda: now[0])
    synced_by: list[str] = []
    real_sync = heads.sync

    def sync() -> None:
        real_sync()
        synced_by.append(threading.current_thread().name)

    heads.sync = sync  # type: ignore[method-assign]
    wakes = []
    real_notify = heads._wake.notify
    heads._wake.notify = lambda n=1: (wakes.append(n), real_notify(n))  # type: ignore[method-assign]
    try:
        heads.put(1, DIGEST)  # the new file: synced inline (not through `sync`)
        _asleep(heads)
        now[0] = 3600.0  # a linger later
        assert heads.put(2, DIGEST, defer=True)  # owed at once: left to the caller
        heads.settle(here=True)
        assert synced_by == [threading.current_thread().name] and wakes == []
        assert read_head(tmp_path / "chain.head") == {"seq": 2, "hash": DIGEST}
        assert heads.put(3, DIGEST, defer=True)  # the thread still asleep
        heads.settle(here=True)  # within the linger of that sync: the thread times it
        assert wakes == [1] and len(synced_by) == 1
    finally:
        heads.close()  # ends the linger: the last head synced, by the thread
        os.close(dir_fd)
    assert synced_by[1:] == ["head-sync"]
    assert read_head(tmp_path / "chain.head") == {"seq": 3, "hash": DIGEST}


def test_a_deferred_put_is_the_threads_while_the_caller_has_more_to_write(
    tmp_path: Path,
) -> None:
    now = [0.0]
    dir_fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    heads = HeadFile(tmp_path / "chain.head", dir_fd, None, linger=3600.0, clock=lambda: now[0])
    synced = threading.Event()
    real_sync = heads.sync

    def sync() -> None:
        real_sync()
        if threading.current_thread().name == "head-sync":
            synced.set()

    heads.sync = sync  # type: ignore[method-assign]
    try:
        heads.put(1, DIGEST)
        _asleep(heads)
        now[0] = 3600.0
        assert heads.put(2, DIGEST, defer=True)
        heads.settle(here=False)  # more batches queued: the woken thread syncs it at once
        assert synced.wait(60)  # at once, not after the (real) hour: 60 s bounds a hang only
        assert heads.syncs == 2
    finally:
        heads.close()
        os.close(dir_fd)
    assert read_head(tmp_path / "chain.head") == {"seq": 2, "hash": DIGEST}
