"""Real processes: kill -9 under load, two writers at once, torn lines, cut tails."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from audit_helpers import ChainFactory, fake_clock

from bridge.audit import AuditChain, ChainCorrupt, tail, verify

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def start_writer(path: Path, tag: str, count: int, concurrency: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "writer_proc.py"),
            str(path),
            tag,
            str(count),
            str(concurrency),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def acknowledged(lines: list[str]) -> dict[int, str]:
    acks = {}
    for line in lines:
        seq, ref = line.split()
        acks[int(seq)] = ref
    return acks


def records_by_seq(path: Path) -> dict[int, dict]:
    return {rec["seq"]: rec for rec in map(json.loads, path.read_bytes().splitlines())}


async def test_kill_9_under_load_loses_no_acknowledged_event(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "chain.jsonl"
    proc = start_writer(path, "w", 0, 16)
    assert proc.stdout is not None
    seen = [proc.stdout.readline() for _ in range(300)]
    proc.send_signal(signal.SIGKILL)
    rest = proc.stdout.read()  # lines already in the pipe were acknowledged too
    proc.stdout.close()
    assert proc.wait() == -signal.SIGKILL
    acks = acknowledged([*seen, *rest.splitlines()])
    assert len(acks) >= 300

    chain = AuditChain(path, None, fake_clock())  # the restart
    async with chain:
        await chain.emit("message.received", "alice", {"chars": 5})
    result = verify(path)
    assert result.ok, result
    stored = records_by_seq(path)
    for seq, ref in acks.items():
        assert stored[seq]["details"]["msg_id"] == ref


async def test_two_processes_append_concurrently(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "chain.jsonl"
    procs = [start_writer(path, tag, 250, 8) for tag in ("a", "b")]
    outputs = [p.communicate()[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    result = verify(path)
    assert result.ok, result
    assert result.records == 500
    stored = records_by_seq(path)
    for out in outputs:
        for seq, ref in acknowledged(out.splitlines()).items():
            assert stored[seq]["details"]["msg_id"] == ref
    refs = {rec["details"]["msg_id"] for rec in stored.values()}
    assert refs == {f"{ord(t)}{n:06d}" for t in "ab" for n in range(250)}


async def test_writer_in_this_process_interleaves_with_another(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "chain.jsonl"
    chain = AuditChain(path, None, fake_clock())
    async with chain:
        proc = start_writer(path, "x", 200, 4)
        for _i in range(100):
            await chain.emit("command.run", "bob", {"name": "help", "outcome": "ok"})
        proc.communicate()
        await chain.emit("command.run", "bob", {"name": "help", "outcome": "ok"})
    result = verify(path)
    assert (result.ok, result.records) == (True, 301)


async def test_torn_last_line_is_cut_and_recorded(make_chain: ChainFactory) -> None:
    path = await make_chain(6)
    torn = b'{"details":{"name":"me.half'
    with path.open("ab") as f:
        f.write(torn)
    assert verify(path).kind == "invalid_json"
    chain = AuditChain(path, None, fake_clock())
    async with chain:
        pass
    result = verify(path)
    assert (result.ok, result.records) == (True, 7)
    [last] = tail(path, 1)
    assert last["event"] == "audit.repaired"
    assert last["details"] == {"bytes_cut": len(torn)}


async def test_cut_tail_refuses_to_continue_and_keeps_evidence(make_chain: ChainFactory) -> None:
    path = await make_chain(6)
    lines = path.read_bytes().splitlines(keepends=True)
    cut = b"".join(lines[:4]) + lines[4][:30]  # cut mid-record: looks torn, but was acknowledged
    path.write_bytes(cut)
    with pytest.raises(ChainCorrupt):
        await AuditChain(path, None, fake_clock()).open()
    assert path.read_bytes() == cut
    assert verify(path).kind == "invalid_json"


async def test_key_mismatch_on_head_refuses_to_open(make_chain: ChainFactory) -> None:
    path = await make_chain(3, b"k" * 32)
    with pytest.raises(ChainCorrupt):
        await AuditChain(path, b"other-key-0123456789", fake_clock()).open()


async def test_emit_many_writes_one_batch_in_order(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "chain.jsonl"
    async with AuditChain(path, None, fake_clock()) as chain:
        await chain.emit("message.received", "alice", {"chars": 5})
        before = chain.batches
        await chain.emit_many(
            [
                ("outcome.graded", "alice", {"label": "approval", "prev_run_id": "m1"}),
                ("skill.graded", "alice", {"name": "csv", "step_milli": 300}),
                ("message.answered", "alice", {"chars": 12, "ms": 3}),
            ]
        )
        assert chain.batches == before + 1
    records = tail(path, 10)
    assert [r["event"] for r in records] == [
        "message.received",
        "outcome.graded",
        "skill.graded",
        "message.answered",
    ]
    assert verify(path).ok
