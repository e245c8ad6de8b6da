"""The writer's path from the queue to the sync: few system calls, and the checks they kept.

A batch in steady state makes one `stat` of the chain's path (still our file? did another
writer append?), its `write` and its `fdatasync`, and no `fstat`: each system call lets
the GIL go and takes it back from the loop. What the dropped calls used to tell is still
seen: another writer's records (the size moved), a chain replaced under the writer (the
inode), an older, longer head file (trimmed on the first put).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from audit_helpers import fake_clock

from bridge.audit import AuditChain, ChainCorrupt, held, verify
from bridge.audit import chain as chain_module
from bridge.audit import store as store_module
from bridge.audit.head import HeadFile
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


@pytest.mark.stray_audit_fields
async def test_the_details_are_fitted_on_the_writer_thread_not_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop only checks the names and copies the details; fitting them to their schema
    (keyed ids, refusals) runs on the writer, and what is written is fitted all the same."""
    path = tmp_path / "audit" / "chain.jsonl"
    threads: list[str] = []
    real = chain_module.sanitize

    def sanitize(*args: object, **kwargs: object) -> dict[str, object]:
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(chain_module, "sanitize", sanitize)
    async with AuditChain(path, None, fake_clock()) as chain:
        given = {"name": "me.secret_plan", "ms": 3, "outcome": "ok", "note": "typed text"}
        done = chain.queue_many([("tool.called", "alice", given)])
        given["ms"] = 999  # the caller's dict, changed after queueing: the copy is written
        assert done is not None and await done == 1
        with pytest.raises(ValueError):
            chain.queue_many([("Not An Event", "alice", {})])  # names: checked on the loop
    assert threads == ["audit-writer"]
    details = json.loads(path.read_text())["details"]
    assert details["ms"] == 3 and details["_unknown"] == 1
    assert details["name"].startswith("n-") and "secret" not in path.read_text()


async def test_a_batch_is_acknowledged_once_its_head_moved_and_the_lock_is_let_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Waking the loop is the batch's last step: when a waiter goes on, the head already
    names its record and the lock is free (the writer wants the GIL no more)."""
    path = tmp_path / "audit" / "chain.jsonl"
    order: list[str] = []
    real_put, real_unlock, real_resolve = HeadFile.put, held.unlock, chain_module._resolve_all

    def put(self: HeadFile, seq: int, digest: str, defer: bool = False) -> bool:
        order.append(f"head {seq}")
        return real_put(self, seq, digest, defer)

    def unlock(fd: int) -> None:
        order.append("unlock")
        real_unlock(fd)

    def resolve(done: list[tuple[object, int]], exc: Exception | None) -> None:
        order.append(f"acknowledge {[seq for _, seq in done]}")
        real_resolve(done, exc)  # type: ignore[arg-type]

    async with AuditChain(path, None, fake_clock()) as chain:
        monkeypatch.setattr(HeadFile, "put", put)
        monkeypatch.setattr(held, "unlock", unlock)
        monkeypatch.setattr(chain_module, "_resolve_all", resolve)
        assert await chain.append(*EVENT) == 1
        assert (read_head(head_path(path)) or {}).get("seq") == 1
        await chain.emit_many([EVENT, EVENT])
        monkeypatch.undo()
    assert order == [
        *("head 1", "unlock", "acknowledge [1]"),
        *("head 3", "unlock", "acknowledge [2, 3]"),
    ]


async def test_a_head_that_cannot_be_written_leaves_the_batch_acknowledged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The records are durable before the head is put: a failed put is logged, its batch
    acknowledged all the same, and the next batch moves the head."""
    path = tmp_path / "audit" / "chain.jsonl"
    async with AuditChain(path, None, fake_clock()) as chain:
        assert await chain.append(*EVENT) == 1

        def put(self: HeadFile, seq: int, digest: str, defer: bool = False) -> bool:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(HeadFile, "put", put)
        assert await chain.append(*EVENT) == 2
        assert (read_head(head_path(path)) or {}).get("seq") == 1  # behind: verify accepts
        assert verify(path).ok
        monkeypatch.undo()
        assert await chain.append(*EVENT) == 3
    assert (read_head(head_path(path)) or {}).get("seq") == 3
    assert "audit head not moved" in caplog.text
    result = verify(path)
    assert result.ok and result.records == 3, result
