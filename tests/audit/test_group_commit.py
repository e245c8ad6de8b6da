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
