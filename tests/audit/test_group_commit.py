"""Group commit: a turn's events share one batch, and a waiter waits for the chain's sync only."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import threading
from pathlib import Path

import pytest
from audit_helpers import fake_clock

from bridge.audit import AuditChain, verify
from bridge.audit import chain as chain_module
from bridge.audit import head as head_module
from bridge.audit.store import head_path, lock_path, read_head

EVENTS = [
    ("message.received", "alice", {"chars": 5}),
    ("outcome.graded", "alice", {}),
    ("message.answered", "alice", {"chars": 7}),
]


async def test_emit_many_is_one_batch_whatever_the_batch_limit(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "chain.jsonl"
    chain = AuditChain(path, None, fake_clock(), max_batch=1)
    async with chain:
        await chain.emit_many(EVENTS)
        assert chain.batches == 1  # the limit counts queued items; a turn's events never split
        await chain.emit_many(EVENTS)
        assert chain.batches == 2
    result = verify(path)
    assert result.ok and result.records == 6, result


async def test_a_waiter_never_waits_for_the_head_sync_which_waits_for_the_idle_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The head is synced lazily, on the writer's thread once nothing is queued: while that
    sync is held, the batch that moved the head is already acknowledged; a batch queued
    meanwhile waits for it (the writer's one thread), and closing syncs the last head."""
    path = tmp_path / "audit" / "chain.jsonl"
    chain = AuditChain(path, None, fake_clock())
    async with chain:
        await chain.emit(*EVENTS[0])  # the head file made (synced at once, with its directory)
        await chain.emit(*EVENTS[0])  # ... its first put comes before this batch's
        entered, release = threading.Event(), threading.Event()
        real = head_module.HeadFile.sync

        def held_sync(self: head_module.HeadFile) -> None:
            entered.set()
            release.wait(60)  # an upper bound only against a hang
            real(self)

        monkeypatch.setattr(head_module.HeadFile, "sync", held_sync)
        seq = await asyncio.wait_for(chain.append(*EVENTS[1]), 60)  # upper bound: a hang
        assert seq == 3  # acknowledged: its waiter did not wait for the head's sync...
        assert await asyncio.to_thread(entered.wait, 60)  # ...which the idle writer began
        more = asyncio.create_task(chain.append(*EVENTS[2]))
        for _ in range(20):
            await asyncio.sleep(0)
        assert not more.done()  # queued behind the head's sync, on the writer's one thread
        release.set()
        assert await asyncio.wait_for(more, 60) == 4
        monkeypatch.setattr(head_module.HeadFile, "sync", real)
    assert read_head(head_path(path)) == {"seq": 4, "hash": read_last_hash(path)}  # synced
    assert verify(path).ok


async def test_under_a_steady_load_the_head_is_synced_lazily_and_at_least_every_lag_puts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches queued back to back share the head's syncs (none while one waits), yet never
    more than `LAG` puts go unsynced: a power cut sets the head back a bounded way."""
    path = tmp_path / "audit" / "chain.jsonl"
    monkeypatch.setattr(head_module, "LAG", 4)
    chain = AuditChain(path, None, fake_clock(), max_batch=1)
    async with chain:
        await chain.emit(*EVENTS[0])  # the head made: one sync
        await chain.emit(*EVENTS[0])
        heads = chain._heads
        assert heads is not None
        unsynced: list[int] = []
        real_put = head_module.HeadFile.put

        def put(self: head_module.HeadFile, seq: int, digest: str) -> None:
            real_put(self, seq, digest)
            unsynced.append(self._unsynced)

        monkeypatch.setattr(head_module.HeadFile, "put", put)
        other = os.open(lock_path(path), os.O_RDWR)
        try:
            fcntl.flock(other, fcntl.LOCK_EX)  # the writer waits: all 40 are queued at once
            task = asyncio.gather(*(chain.emit(*EVENTS[1]) for _ in range(40)))
            for _ in range(20):
                await asyncio.sleep(0)
            before = heads.syncs
            fcntl.flock(other, fcntl.LOCK_UN)
            await asyncio.wait_for(task, 60)  # an upper bound only against a hang
        finally:
            os.close(other)
        # 40 puts, and maybe the second emit's (its put may follow its acknowledgement)
        assert chain.batches == 42 and len(unsynced) in (40, 41)
        assert max(unsynced) < 4  # the lag bound: synced at the fourth unsynced put
        assert heads.syncs - before <= 41 // 4 + 1  # every fourth put, and once idle
    assert verify(path).ok


def read_last_hash(path: Path) -> str:
    return str(json.loads(path.read_bytes().splitlines()[-1])["hash"])


async def test_a_batch_that_cannot_be_written_fails_its_waiter_and_leaves_no_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "audit" / "chain.jsonl"
    chain = AuditChain(path, None, fake_clock())
    async with chain:
        await chain.emit_many(EVENTS[:1])
        real = chain_module.os.fdatasync

        def full(fd: int) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(chain_module.os, "fdatasync", full)
        with pytest.raises(OSError, match="No space"):
            await chain.emit_many(EVENTS)  # the waiter hears of it: not one event is kept
        monkeypatch.setattr(chain_module.os, "fdatasync", real)
        await chain.emit_many(EVENTS[1:])
        await chain.emit_many([])  # nothing to write: returns at once
    result = verify(path)
    assert result.ok and result.records == 3, result


async def test_a_lock_held_by_another_process_never_blocks_the_loop(tmp_path: Path) -> None:
    """The lock taken elsewhere (another open file: another process, for flock): the writer
    thread waits for it, the loop runs on, and the waiter goes on once it is free."""
    path = tmp_path / "audit" / "chain.jsonl"
    async with AuditChain(path, None, fake_clock()) as chain:
        await chain.emit(*EVENTS[0])
        other = os.open(lock_path(path), os.O_RDWR)
        try:
            fcntl.flock(other, fcntl.LOCK_EX)
            task = asyncio.create_task(chain.emit_many(EVENTS))
            for _ in range(20):
                await asyncio.sleep(0)  # the loop runs on: nothing blocks it
            assert not task.done()
            fcntl.flock(other, fcntl.LOCK_UN)
            await asyncio.wait_for(task, 60)  # an upper bound only against a hang
        finally:
            os.close(other)
    result = verify(path)
    assert result.ok and result.records == 4, result
