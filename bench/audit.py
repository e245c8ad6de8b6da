"""Audit chain benchmark: appends/s (one at a time, concurrent with and without
group commit) and verify throughput. Prints figures and same-run ratios.

Run: .venv/bin/python -m bench.audit [--records 100000] [--rss 100000,1000000] [--quick]

`--rss` builds chains of those lengths and reports the peak RSS of a fresh
process that only runs `verify` on each (ru_maxrss of that child), so the
figure is verify's own footprint, not the benchmark's.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def _verify_child(path: str) -> None:
    """Run in a fresh process: verify `path` with the key, print records and peak RSS (KiB)."""
    result = verify(Path(path), KEY)
    assert result.ok, result
    print(result.records, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def peak_rss(root: Path, sizes: list[int]) -> None:
    for n in sizes:
        big = root / f"rss{n}" / "chain.jsonl"
        big.parent.mkdir()
        build_big(big, n)
        out = subprocess.run(
            [sys.executable, __file__, "--verify-child", str(big)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        mib = int(out[1]) / 1024
        size = big.stat().st_size / 2**20
        print(f"verify peak RSS {n:>9} records ({size:7.1f} MiB chain): {mib:8.1f} MiB")
        big.unlink()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--appends", type=int, default=300)
    ap.add_argument("--rss", default="", help="comma-separated chain lengths; only RSS")
    ap.add_argument("--verify-child", default="", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="tiny sizes (CI: it still runs)")
    args = ap.parse_args()
    if args.quick:
        args.records, args.appends = 2_000, 20
    if args.verify_child:
        _verify_child(args.verify_child)
        return
    if args.rss:
        with tempfile.TemporaryDirectory() as tmp:
            peak_rss(Path(tmp), [int(x) for x in args.rss.split(",")])
        return
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
