"""`verify` streams the chain: its peak memory does not grow with the chain's length."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from bridge.audit import verify
from bridge.audit.record import GENESIS, build_record, head_document
from bridge.audit.store import head_path

KEY = b"stream-test-key-0123456789abcdef"
DETAILS = {"name": "me.daily_log", "hash": "ab12cd34ef56", "ms": 12, "outcome": "ok"}


def _chain(path: Path, n: int) -> None:
    prev = GENESIS
    with path.open("w") as f:
        for seq in range(1, n + 1):
            rec, line = build_record(
                seq=seq, ts=1_800_000_000_000 + seq, event="tool.called",
                tenant="alice", details=DETAILS, prev=prev, key=KEY,
            )  # fmt: skip
            prev = str(rec["hash"])
            f.write(line)
    doc = head_document(n, prev, KEY)
    head_path(path).write_text(str(doc).replace("'", '"'))


def _peak(path: Path) -> int:
    tracemalloc.start()
    try:
        result = verify(path, KEY)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.ok, result
    return peak


def test_peak_memory_does_not_grow_with_chain_length(tmp_path: Path) -> None:
    small, big = tmp_path / "small.jsonl", tmp_path / "big.jsonl"
    _chain(small, 2_000)
    _chain(big, 8_000)
    assert big.stat().st_size > 3.5 * small.stat().st_size
    p_small, p_big = _peak(small), _peak(big)
    # Reading the whole file would make the peak scale with its size (4x);
    # a streaming walk holds one line at a time.
    assert p_big < 2 * p_small, (p_small, p_big)
    assert p_big < big.stat().st_size / 4, (p_big, big.stat().st_size)


def test_torn_tail_found_while_streaming(tmp_path: Path) -> None:
    path = tmp_path / "chain.jsonl"
    _chain(path, 50)
    with path.open("ab") as f:
        f.write(b'{"seq":51,"ev')
    result = verify(path, KEY)
    assert not result.ok and result.kind == "invalid_json" and result.line == 51
    assert result.records == 50 and "torn last line" in result.message
