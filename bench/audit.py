"""Audit chain benchmark: appends/s (one at a time, concurrent with and without
group commit) and verify throughput. Prints figures and same-run ratios.

Run: .venv/bin/python bench/audit.py [--records 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bridge.audit import AuditChain, verify
from bridge.audit.record import GENESIS, build_record, head_document
from bridge.audit.store import head_path

DETAILS = {"name": "me.daily_log", "hash": "ab12cd34ef56", "ms": 12, "outcome": "ok"}
KEY = b"bench-hmac-key-0123456789abcdef"


async def sequential(path: Path, n: int) -> float:
    async with AuditChain(path, KEY) as chain:
        t = time.perf_counter()
        for _ in range(n):
            await chain.emit("tool.called", "alice", DETAILS)
        return n / (time.perf_counter() - t)


async def concurrent(path: Path, n: int, max_batch: int) -> tuple[float, int]:
    async with AuditChain(path, KEY, max_batch=max_batch) as chain:
        t = time.perf_counter()
        await asyncio.gather(*(chain.emit("tool.called", "alice", DETAILS) for _ in range(n)))
        return n / (time.perf_counter() - t), chain.batches


def build_big(path: Path, n: int) -> None:
    prev = GENESIS
    with path.open("w") as f:
        for seq in range(1, n + 1):
            rec, line = build_record(
                seq=seq,
                ts=1_800_000_000_000 + seq,
                event="tool.called",
                tenant="alice",
                details=DETAILS,
                prev=prev,
                key=KEY,
            )
            prev = str(rec["hash"])
            f.write(line)
    head_path(path).write_text(str(head_document(n, prev, KEY)).replace("'", '"'))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--appends", type=int, default=300)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        seq_rate = asyncio.run(sequential(root / "a" / "chain.jsonl", args.appends))
        one_rate, one_batches = asyncio.run(
            concurrent(root / "b" / "chain.jsonl", args.appends * 4, 1)
        )
        grp_rate, grp_batches = asyncio.run(
            concurrent(root / "c" / "chain.jsonl", args.appends * 4, 512)
        )
        print(f"appends/s one at a time (await each):      {seq_rate:10.0f}")
        print(
            f"appends/s {args.appends * 4} concurrent, no batching: {one_rate:10.0f}"
            f"  ({one_batches} fsync batches)"
        )
        print(
            f"appends/s {args.appends * 4} concurrent, group commit: {grp_rate:10.0f}"
            f"  ({grp_batches} fsync batches)"
        )
        print(f"ratio group commit / no batching: {grp_rate / one_rate:.1f}x")
        big = root / "big" / "chain.jsonl"
        big.parent.mkdir()
        build_big(big, args.records)
        for key, label in ((None, "without key"), (KEY, "with HMAC key")):
            t = time.perf_counter()
            result = verify(big, key)
            dt = time.perf_counter() - t
            assert result.ok and result.records == args.records, result
            print(
                f"verify {label:14s} {args.records / dt:10.0f} records/s ({args.records} records)"
            )


if __name__ == "__main__":
    main()
