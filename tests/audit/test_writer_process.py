"""The audit writer in a process of its own (`ProcessAuditChain`): order, shutdown, death."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest
from audit_helpers import KEY, fake_clock

from bridge.audit import ChainCorrupt, verify
from bridge.audit.proc_chain import AuditWriterDied, ProcessAuditChain
from bridge.audit.store import head_path, read_head

TURN = [
    ("message.received", "alice", {"chars": 5}),
    ("outcome.graded", "alice", {}),
    ("message.answered", "alice", {"chars": 7}),
]


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


async def test_ten_turns_at_once_keep_their_batches_whole_and_in_order(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "chain.jsonl"
    async with ProcessAuditChain(path, KEY, fake_clock()) as chain:
        for _ in range(5):
            await asyncio.gather(
                *(chain.emit_many([(e, f"t{i}", d) for e, _, d in TURN]) for i in range(10))
            )
        seqs = await asyncio.gather(*(chain.append(*TURN[0]) for _ in range(10)))
    assert sorted(seqs) == list(range(151, 161))
    got = records(path)
    assert [r["seq"] for r in got] == list(range(1, 161))
    for start in range(0, 150, 3):  # a turn's three events are adjacent, in their order
        batch = got[start : start + 3]
        assert len({r["tenant"] for r in batch}) == 1
        assert [r["event"] for r in batch] == [e for e, _, _ in TURN]
    assert verify(path, KEY).ok


async def test_shutdown_writes_what_was_sent_and_syncs_the_head(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "chain.jsonl"
    chain = ProcessAuditChain(path, KEY, fake_clock())
    await chain.open()
    tasks = [asyncio.create_task(chain.emit_many(TURN)) for _ in range(40)]
    await asyncio.sleep(0)  # every batch sent, none acknowledged yet
    await chain.aclose()
    await asyncio.gather(*tasks)  # each acknowledged before the writer exited
    result = verify(path, KEY)
    assert result.ok and result.records == 120, result
    head = read_head(head_path(path))
    assert head is not None and head["seq"] == 120


async def test_a_killed_writer_fails_its_waiters_and_is_started_again(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "chain.jsonl"
    async with ProcessAuditChain(path, KEY, fake_clock()) as chain:
        await chain.emit_many(TURN)
        proc = chain._proc
        assert proc is not None
        os.kill(proc.pid, signal.SIGSTOP)  # the next batch waits on a writer that is stuck
        waiting = asyncio.create_task(chain.emit_many(TURN))
        await asyncio.sleep(0)
        os.kill(proc.pid, signal.SIGKILL)
        with pytest.raises(AuditWriterDied, match="exited"):
            await waiting
        assert await chain.append(*TURN[0]) >= 4  # a new writer, on the same chain
        assert chain._proc is not proc
    assert verify(path, KEY).ok


async def test_the_key_is_never_on_the_writer_command_line(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "chain.jsonl"
    async with ProcessAuditChain(path, KEY, fake_clock()) as chain:
        assert chain._proc is not None
        cmdline = await asyncio.to_thread(Path(f"/proc/{chain._proc.pid}/cmdline").read_bytes)
        assert KEY not in cmdline and KEY.hex().encode() not in cmdline


async def test_a_cut_tail_refuses_to_open(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "chain.jsonl"
    async with ProcessAuditChain(path, None, fake_clock()) as chain:
        for _ in range(3):
            await chain.emit_many(TURN)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-2]))
    with pytest.raises(ChainCorrupt, match="tail cut"):
        await ProcessAuditChain(path, None, fake_clock()).open()
