"""Tampering with a real chain is detected with the right kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from audit_helpers import KEY, ChainFactory

from bridge.audit import AuditChain, verify
from bridge.audit.record import build_record, head_document
from bridge.audit.store import head_path


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def write_lines(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"".join(lines))


async def test_intact_chain_verifies(make_chain: ChainFactory) -> None:
    path = await make_chain(20, KEY)
    assert verify(path, KEY).ok
    assert verify(path, KEY).records == 20
    assert verify(path).ok  # the MAC is optional for a reader without the key


async def test_one_changed_byte_is_tampered(make_chain: ChainFactory) -> None:
    path = await make_chain(20)
    data = bytearray(path.read_bytes())
    lines = lines_of(path)
    offset = sum(len(x) for x in lines[:6])
    pos = data.index(b'"ms":6', offset) + 5
    data[pos] = ord("7")
    path.write_bytes(bytes(data))
    result = verify(path)
    assert (result.ok, result.kind, result.first_bad_seq, result.records) == (
        False,
        "tampered",
        7,
        6,
    )


async def test_byte_breaking_json_is_invalid_json(make_chain: ChainFactory) -> None:
    path = await make_chain(10)
    lines = lines_of(path)
    lines[4] = lines[4].replace(b"{", b"[", 1)
    write_lines(path, lines)
    result = verify(path)
    assert (result.kind, result.first_bad_seq, result.line) == ("invalid_json", 5, 5)


async def test_deleted_line_is_sequence_gap(make_chain: ChainFactory) -> None:
    path = await make_chain(20)
    lines = lines_of(path)
    del lines[9]
    write_lines(path, lines)
    result = verify(path)
    assert (result.kind, result.first_bad_seq) == ("sequence_gap", 11)


async def test_swapped_lines_are_sequence_gap(make_chain: ChainFactory) -> None:
    path = await make_chain(20)
    lines = lines_of(path)
    lines[4], lines[5] = lines[5], lines[4]
    write_lines(path, lines)
    result = verify(path)
    assert (result.kind, result.first_bad_seq) == ("sequence_gap", 6)


async def test_cut_tail_is_truncated_tail(make_chain: ChainFactory) -> None:
    path = await make_chain(20)
    write_lines(path, lines_of(path)[:17])
    result = verify(path)
    assert (result.kind, result.first_bad_seq, result.records) == ("truncated_tail", 18, 17)


async def test_whole_chain_deleted_with_head_left_is_truncated(make_chain: ChainFactory) -> None:
    path = await make_chain(5)
    path.write_bytes(b"")
    assert verify(path).kind == "truncated_tail"


async def test_missing_head_is_reported(make_chain: ChainFactory) -> None:
    path = await make_chain(5)
    head_path(path).unlink()
    assert verify(path).kind == "truncated_tail"


def forge_next(path: Path, key: bytes | None) -> None:
    """Append a well-formed record with a correctly recomputed hash, and move the head."""
    last = json.loads(lines_of(path)[-1])
    record, line = build_record(
        seq=last["seq"] + 1,
        ts=last["ts"] + 1,
        event="memory.deleted",
        tenant="alice",
        details={"name": "forged"},
        prev=last["hash"],
        key=key,
    )
    with path.open("ab") as f:
        f.write(line.encode())
    head = head_document(int(record["seq"]), str(record["hash"]), key)
    head_path(path).write_text(json.dumps(head))


async def test_forged_record_with_recomputed_hash_caught_by_mac(make_chain: ChainFactory) -> None:
    path = await make_chain(20, KEY)
    forge_next(path, key=None)
    assert verify(path).ok  # without the key a perfect forgery is indistinguishable...
    result = verify(path, KEY)  # ...with it, it is not
    assert (result.kind, result.first_bad_seq) == ("bad_mac", 21)


async def test_forgery_with_wrong_key_is_bad_mac(make_chain: ChainFactory) -> None:
    path = await make_chain(20, KEY)
    forge_next(path, key=b"attacker-guessed-key-000000000")
    result = verify(path, KEY)
    assert (result.kind, result.first_bad_seq) == ("bad_mac", 21)


async def test_edited_record_with_recomputed_hash_breaks_link(make_chain: ChainFactory) -> None:
    path = await make_chain(20, KEY)
    lines = lines_of(path)
    rec = json.loads(lines[7])
    rec["details"]["outcome"] = "error"
    _, line = build_record(
        seq=rec["seq"],
        ts=rec["ts"],
        event=rec["event"],
        tenant=rec["tenant"],
        details=rec["details"],
        prev=rec["prev"],
        key=None,
    )
    lines[7] = line.encode()
    write_lines(path, lines)
    assert (verify(path).kind, verify(path).first_bad_seq) == ("broken_link", 9)
    assert (verify(path, KEY).kind, verify(path, KEY).first_bad_seq) == ("bad_mac", 8)


async def test_replayed_old_record_is_sequence_gap(make_chain: ChainFactory) -> None:
    path = await make_chain(20, KEY)
    lines = lines_of(path)
    write_lines(path, [*lines, lines[2]])
    result = verify(path, KEY)
    assert (result.kind, result.first_bad_seq, result.records) == ("sequence_gap", 3, 20)


async def test_replay_in_place_of_a_record_is_detected(make_chain: ChainFactory) -> None:
    path = await make_chain(20)
    lines = lines_of(path)
    lines[10] = lines[3]
    write_lines(path, lines)
    assert verify(path).kind == "sequence_gap"


async def test_whole_rewrite_without_key_caught_by_mac(
    make_chain: ChainFactory, tmp_path: Path
) -> None:
    path = await make_chain(8, KEY)
    prev = "0" * 64
    out = []
    for raw in lines_of(path):
        rec = json.loads(raw)
        rec["details"]["outcome"] = "rewritten"
        record, line = build_record(
            seq=rec["seq"],
            ts=rec["ts"],
            event=rec["event"],
            tenant=rec["tenant"],
            details=rec["details"],
            prev=prev,
            key=None,
        )
        prev = str(record["hash"])
        out.append(line.encode())
    write_lines(path, out)
    head_path(path).write_text(json.dumps(head_document(8, prev, None)))
    assert verify(path).ok
    result = verify(path, KEY)
    assert (result.kind, result.first_bad_seq) == ("bad_mac", 1)


async def test_tampered_head_is_detected(make_chain: ChainFactory) -> None:
    path = await make_chain(5, KEY)
    head = json.loads(head_path(path).read_text())
    head["hash"] = "f" * 64
    head_path(path).write_text(json.dumps(head))
    assert verify(path).kind == "tampered"


async def test_head_mac_checked_with_key(make_chain: ChainFactory) -> None:
    path = await make_chain(5, KEY)
    head = json.loads(head_path(path).read_text())
    del head["mac"]
    head_path(path).write_text(json.dumps(head))
    assert verify(path).ok
    assert verify(path, KEY).kind == "bad_mac"


async def test_torn_last_line_is_reported_by_verify(make_chain: ChainFactory) -> None:
    path = await make_chain(5)
    with path.open("ab") as f:
        f.write(b'{"details":{"na')
    result = verify(path)
    assert (result.kind, result.first_bad_seq, result.records) == ("invalid_json", 6, 5)


async def test_emit_validates_event_and_tenant(tmp_path: Path) -> None:
    async with AuditChain(tmp_path / "audit" / "chain.jsonl") as chain:
        with pytest.raises(ValueError):
            await chain.emit("Not An Event", "alice", {})
        with pytest.raises(ValueError):
            await chain.emit("memory.saved", "../etc", {})
        await chain.emit("memory.saved", None, {"name": "x"})
    assert verify(tmp_path / "audit" / "chain.jsonl").records == 1
