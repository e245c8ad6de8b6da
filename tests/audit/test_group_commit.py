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


async def test_waiters_and_the_next_batches_go_on_before_the_head_is_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The head's sync on its own thread (within the linger, or with batches queued behind
    the one that moved it): while it is held, that batch is acknowledged and the next
    batches are written; closing syncs the last head."""
    path = tmp_path / "audit" / "chain.jsonl"
    chain = AuditChain(path, None, fake_clock())
    real_settle = head_module.HeadFile.settle
    # as if a batch were always queued behind: a put after a quiet spell (20 ms since the
    # first head's sync, on a loaded machine) goes to the thread too, never the writer
    monkeypatch.setattr(
        head_module.HeadFile, "settle", lambda self, here: real_settle(self, here=False)
    )
    async with chain:
        await chain.emit(*EVENTS[0])  # the head file made (synced at once, with its directory)
        entered, release = threading.Event(), threading.Event()
        real = head_module.HeadFile.sync

        def held_sync(self: head_module.HeadFile) -> None:
            if threading.current_thread().name != "head-sync":
                # the first put's sync of the new file, inline on the chain's writer: the
                # emit above returned once its record was durable, maybe before that put
                # (seen under load: the writer was held instead, and the test waited 60 s)
                return real(self)
            entered.set()
            release.wait(60)  # an upper bound only against a hang
            real(self)

        monkeypatch.setattr(head_module.HeadFile, "sync", held_sync)
        task = asyncio.create_task(chain.append(*EVENTS[1]))
        assert await asyncio.to_thread(entered.wait, 60)
        done, _ = await asyncio.wait({task}, timeout=60)  # upper bound against a hang
        more = await asyncio.wait_for(chain.append(*EVENTS[2]), 60)  # beside the held sync
        held = not release.is_set()
        release.set()
        assert task in done and held  # acknowledged while the head was still being synced
        assert (task.result(), more) == (2, 3)
        monkeypatch.setattr(head_module.HeadFile, "sync", real)
    assert read_head(head_path(path)) == {"seq": 3, "hash": read_last_hash(path)}  # synced
    assert verify(path).ok


async def test_after_a_quiet_spell_the_writer_syncs_the_head_itself_once_it_acknowledged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch after a quiet spell (here every batch: no linger) with nothing queued
    behind it: its waiter is acknowledged first, then the writer syncs the head on its
    own thread; the head's thread is never woken for it. (A batch queued as the waiter
    goes on leaves the head to the thread: `test_a_deferred_put_is_the_threads...`.)"""
    path = tmp_path / "audit" / "chain.jsonl"
    chain = AuditChain(path, None, fake_clock())
    order: list[str] = []
    async with chain:
        await chain.emit(*EVENTS[0])  # the head file made (synced inline, with its directory)
        heads = chain._heads
        assert heads is not None
        heads._linger = 0.0  # every later put comes after a quiet spell
        while not heads._quiet:  # the head's thread asleep, waiting for a put
            await asyncio.sleep(0.001)
        real_sync, real_resolve = head_module.HeadFile.sync, chain_module._resolve_all

        def sync(self: head_module.HeadFile) -> None:
            real_sync(self)
            order.append(f"head synced on {threading.current_thread().name}")

        def resolve(done: list[tuple[object, int]], exc: Exception | None) -> None:
            order.append(f"acknowledged {[seq for _, seq in done]}")
            real_resolve(done, exc)  # type: ignore[arg-type]

        monkeypatch.setattr(head_module.HeadFile, "sync", sync)
        monkeypatch.setattr(chain_module, "_resolve_all", resolve)
        for _ in range(3):
            synced = heads.syncs
            await chain.append(*EVENTS[1])
            while heads.syncs == synced:  # nothing queued until this head is synced
                await asyncio.sleep(0.001)
    monkeypatch.undo()
    assert order == [
        *("acknowledged [2]", "head synced on audit-writer"),
        *("acknowledged [3]", "head synced on audit-writer"),
        *("acknowledged [4]", "head synced on audit-writer"),
    ]
    assert read_head(head_path(path)) == {"seq": 4, "hash": read_last_hash(path)}
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


async def test_a_failed_sync_acknowledges_no_waiter_of_its_batch_and_the_next_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chain's sync fails while more turns queue behind it: the failing batch's waiters
    all fail (none acknowledged), its records are cut back to the last durable one, the
    turns queued behind it are written after that record once the sync works again, and
    the chain verifies."""
    path = tmp_path / "audit" / "chain.jsonl"
    chain = AuditChain(path, None, fake_clock())
    async with chain:
        await chain.emit_many(EVENTS[:1])
        entered, release = threading.Event(), threading.Event()
        real = chain_module.os.fdatasync

        def failing(fd: int) -> None:
            if fd != chain._fd:  # the head file's first sync, maybe after the ack above
                return real(fd)
            entered.set()
            release.wait(60)  # an upper bound only against a hang
            raise OSError(5, "Input/output error")

        monkeypatch.setattr(chain_module.os, "fdatasync", failing)
        first = asyncio.create_task(chain.emit_many(EVENTS))
        assert await asyncio.to_thread(entered.wait, 60)
        later = [asyncio.create_task(chain.emit_many(EVENTS)) for _ in range(3)]
        await asyncio.sleep(0)  # queued while the failing sync runs
        monkeypatch.setattr(chain_module.os, "fdatasync", real)
        release.set()
        with pytest.raises(OSError) as failed:
            await first
        assert failed.value.errno == 5
        await asyncio.gather(*later)  # the next batches go on from the durable record
        assert await chain.append(*EVENTS[2]) == 1 + 3 * 3 + 1
    result = verify(path)
    assert result.ok and result.records == 11, result
    assert read_head(head_path(path)) == {"seq": 11, "hash": read_last_hash(path)}
