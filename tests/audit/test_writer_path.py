"""The writer's path from the queue to the sync: few system calls, and the checks they kept.

A batch in steady state makes one `stat` of the chain's path (still our file? did another
writer append?), its `write` and its `fdatasync`, and no `fstat`: each system call lets
the GIL go and takes it back from the loop. What the dropped calls used to tell is still
seen: another writer's records (the size moved), a chain replaced under the writer (the
inode), an older, longer head file (trimmed on the first put).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from audit_helpers import fake_clock

from bridge.audit import AuditChain, ChainCorrupt, verify
from bridge.audit import chain as chain_module
from bridge.audit import store as store_module
from bridge.audit.store import HEAD_BYTES, head_path, read_head

EVENT = ("message.received", "alice", {"chars": 5})


async def test_a_steady_batch_stats_the_path_once_and_never_fstats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "audit" / "chain.jsonl"
    async with AuditChain(path, None, fake_clock()) as chain:
        await chain.emit(*EVENT)  # the head file made (its first put may follow the ack)
        await chain.emit(*EVENT)  # ... but comes before this batch, on the same thread
        calls: list[str] = []
        real_stat, real_fstat = os.stat, os.fstat

        def stat(p: object, *a: object, **k: object) -> os.stat_result:
            calls.append("stat")
            return real_stat(p, *a, **k)  # type: ignore[arg-type]

        def fstat(fd: int) -> os.stat_result:
            calls.append("fstat")
            return real_fstat(fd)

        monkeypatch.setattr(chain_module.os, "stat", stat)
        monkeypatch.setattr(chain_module.os, "fstat", fstat)
        monkeypatch.setattr(store_module.os, "fstat", fstat)
        for _ in range(5):
            await chain.emit_many([EVENT, EVENT])
        monkeypatch.undo()
    assert calls == ["stat"] * 5
    result = verify(path)
    assert result.ok and result.records == 12, result


async def test_records_another_writer_appended_between_batches_are_continued(
    tmp_path: Path,
) -> None:
    """Two chains on one file (two open files: the lock is shared as between processes):
    each sees the other's records by the size it stats and links its batch after them."""
    path = tmp_path / "audit" / "chain.jsonl"
    async with (
        AuditChain(path, None, fake_clock()) as one,
        AuditChain(path, None, fake_clock()) as two,
    ):
        for _ in range(3):
            assert await one.append(*EVENT) + 1 == await two.append(*EVENT)
    result = verify(path)
    assert result.ok and result.records == 6, result


async def test_a_chain_replaced_under_the_writer_is_refused_and_left_alone(
    tmp_path: Path,
) -> None:
    path = tmp_path / "audit" / "chain.jsonl"
    async with AuditChain(path, None, fake_clock()) as chain:
        await chain.emit(*EVENT)
        path.rename(path.with_name("aside.jsonl"))
        path.write_bytes(b"")  # same name, another file (inode)
        with pytest.raises(ChainCorrupt, match="replaced"):
            await chain.emit(*EVENT)
        assert path.read_bytes() == b""
        with pytest.raises(ChainCorrupt, match="replaced"):
            await chain.emit(*EVENT)  # and again: no cached state lets a batch through
    assert path.read_bytes() == b""


async def test_an_older_longer_head_is_trimmed_by_the_first_put(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "chain.jsonl"
    async with AuditChain(path, None, fake_clock()) as chain:
        await chain.emit(*EVENT)
    head = head_path(path)
    head.write_bytes(head.read_bytes() + b" " * 100)  # an older writer's longer head
    async with AuditChain(path, None, fake_clock()) as chain:
        await chain.emit(*EVENT)
        await chain.emit(*EVENT)
    assert head.stat().st_size == HEAD_BYTES
    assert (read_head(head) or {}).get("seq") == 3
    result = verify(path)
    assert result.ok and result.records == 3, result
