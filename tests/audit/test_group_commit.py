"""Group commit: a turn's events share one batch, and a waiter waits for the chain's sync only."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from audit_helpers import fake_clock

from bridge.audit import AuditChain, verify
from bridge.audit import chain as chain_module
from bridge.audit.store import head_path, read_head

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


async def test_waiter_goes_on_before_the_head_is_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "audit" / "chain.jsonl"
    chain = AuditChain(path, None, fake_clock())
    async with chain:
        entered, release = threading.Event(), threading.Event()
        real = chain_module.write_head  # type: ignore[attr-defined]

        def held_head(*args: object) -> None:
            entered.set()
            release.wait(60)  # an upper bound only against a hang
            real(*args)  # type: ignore[arg-type]

        monkeypatch.setattr(chain_module, "write_head", held_head)
        task = asyncio.create_task(chain.append(*EVENTS[0]))
        assert await asyncio.to_thread(entered.wait, 60)
        done, _ = await asyncio.wait({task}, timeout=60)  # upper bound against a hang
        held = not release.is_set()
        release.set()
        assert task in done and held  # acknowledged while the head was still being written
        assert task.result() == 1
        monkeypatch.setattr(chain_module, "write_head", real)
        await chain.emit(*EVENTS[2])
    head = read_head(head_path(path))
    assert head is not None and head["seq"] == 2
    assert verify(path).ok


async def test_under_load_the_head_follows_every_few_batches_and_catches_up(
    tmp_path: Path,
) -> None:
    """Twenty batches queued behind the lock: the head is written after every fourth
    (`max_head_lag`), never ahead of a synced record, and at the end names the last."""
    import fcntl
    import os

    from bridge.audit.store import lock_path

    path = tmp_path / "audit" / "chain.jsonl"
    chain = AuditChain(path, None, fake_clock(), max_batch=1, max_head_lag=4)
    heads: list[int] = []
    ahead: list[int] = []  # heads naming a record not yet synced (the writer thread's view)
    real = chain_module.write_head  # type: ignore[attr-defined]

    def watched(head_file: Path, dir_fd: int, seq: int, *rest: object) -> None:
        if seq > chain.batches:
            ahead.append(seq)
        heads.append(seq)
        real(head_file, dir_fd, seq, *rest)  # type: ignore[arg-type]

    chain_module.write_head = watched  # type: ignore[attr-defined]
    try:
        async with chain:  # closed (its thread joined) before the real write_head is back
            fd = os.open(lock_path(path), os.O_RDWR)
            fcntl.flock(fd, fcntl.LOCK_EX)  # another process's turn: the writer waits
            tasks = [asyncio.create_task(chain.append(*EVENTS[0])) for _ in range(20)]
            await asyncio.sleep(0)  # every append queued its item
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            assert sorted(await asyncio.gather(*tasks)) == list(range(1, 21))
    finally:
        chain_module.write_head = real  # type: ignore[attr-defined]
    assert chain.batches == 20 and not ahead
    assert heads == [4, 8, 12, 16, 20]
    head = read_head(head_path(path))
    assert head is not None and head["seq"] == 20
    assert verify(path).ok


async def test_a_deferred_head_catches_up_when_nothing_waits(tmp_path: Path) -> None:
    """Batches that found others waiting left the head behind; once the queue is empty
    the writer moves it to the last record without a new event."""
    import fcntl
    import os

    from bridge.audit.store import lock_path
    from tests.waits import until

    path = tmp_path / "audit" / "chain.jsonl"
    chain = AuditChain(path, None, fake_clock(), max_batch=1, max_head_lag=100)
    async with chain:
        await chain.emit(*EVENTS[0])
        fd = os.open(lock_path(path), os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)
        tasks = [asyncio.create_task(chain.append(*EVENTS[0])) for _ in range(10)]
        await asyncio.sleep(0)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
        await asyncio.gather(*tasks)

        def head_seq() -> object:
            head = read_head(head_path(path))
            return head is not None and head["seq"]

        await until(lambda: head_seq() == 11, "the head at the last record")
    assert chain.heads == 2  # after the first emit, and once when the queue ran dry
