"""Audit chain benchmark: a turn's batch against its floor, appends/s (one at a time,
concurrent with and without group commit) and verify throughput. Prints figures and
same-run ratios.

Run: .venv/bin/python -m bench.audit [--records 100000] [--rss 100000,1000000] [--quick]

The turn's batch: `emit_many` of a turn's three events, p50 over `--turns`, with the
loop idle while it syncs and with the loop busy meanwhile (about 0.3 ms of Python in
three slices, as a turn's end unit is while the writer syncs: the writer thread then
waits for the GIL), each next to the floor of a durable chain timed between batches in
the same run (one appended line and its `fdatasync`), and the CPU of each thread per
batch; a third row adds 2 ms of idle loop after each batch and its floor (a 1-chat
Telegram round trip's cadence: the loop, the writer and the head's sync sleep between
turns), a fourth 25 ms (a chat at a person's pace: each batch after a quiet spell
longer than the head's 20 ms linger, its head synced at once). Each row prints p90
too. In session 35 the 2 ms cadence (run alone, old and new trees alternating) was
the only A/B of a chain change that read through a machine load of 4-8; the Telegram
round trip's did not.

Then the head's sync thread alone (`bridge.audit.head`): a put every 2 ms (a steady
load) and every 30 ms (turns further apart than its 20 ms linger) for a second each,
its syncs and its context switches (each a wake-up: for a put, the linger's end, the
disk) per put and per sync.

Then where the 25 ms row's CPU goes: the same batches as is, with the head's sync a
no-op and with the chain's sync a no-op too (knock-outs in this process only, never a
way to run the chain), alternating, medians: CPU per batch of the process and of each
thread with its switches. The difference is the kernel's two syncs (their system calls,
the waits and wake-ups round them); what stays is the writer's Python and short calls,
run cold after each sleep, and the loop's side of the hand-off.

`--rss` builds chains of those lengths and reports the peak RSS of a fresh
process that only runs `verify` on each (ru_maxrss of that child), so the
figure is verify's own footprint, not the benchmark's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bridge.app.channels_up import PLATFORMS
from bridge.audit import AuditChain, verify
from bridge.audit import chain as chain_module
from bridge.audit.catalogue import EVENTS
from bridge.audit.head import HeadFile
from bridge.audit.record import GENESIS, build_record, head_document
from bridge.audit.schema import schemas_for
from bridge.audit.store import head_path

DETAILS = {"name": "me.daily_log", "hash": "ab12cd34ef56", "ms": 12, "outcome": "ok"}
KEY = b"bench-hmac-key-0123456789abcdef"


TURN = [  # a turn's batch, with the catalogue's examples (each fits its schema)
    (name, "alice", EVENTS[name])
    for name in ("message.received", "outcome.graded", "message.answered")
]


def _busy(seconds: float) -> None:
    """Python on the loop's thread for about `seconds`, in six slices with a system call
    between them that lets the GIL go (as a turn's SQLite calls do)."""
    for _ in range(6):
        end = time.perf_counter() + seconds / 6
        while time.perf_counter() < end:
            sum(range(50))
        time.sleep(0)


def _threads() -> dict[str, tuple[float, int]]:
    """CPU seconds and context switches (voluntary: each a wait, for a lock, the GIL or the
    disk) so far of each live thread, by name."""
    out: dict[str, tuple[float, int]] = {}
    for thread in threading.enumerate():
        if thread.ident is None or thread.native_id is None:
            continue
        try:
            cpu = time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
            status = Path(f"/proc/self/task/{thread.native_id}/status").read_text()
        except (OSError, AttributeError):
            continue
        switches = sum(
            int(line.split()[1])
            for line in status.splitlines()
            if line.startswith("voluntary_ctxt_switches")
        )
        name = "loop" if thread is threading.main_thread() else thread.name
        had = out.get(name, (0.0, 0))
        out[name] = (had[0] + cpu, had[1] + switches)
    return out


async def turn_batches(
    path: Path, n: int, busy: float, gap: float = 0.0
) -> tuple[list[float], list[float], str]:
    """`n` turn batches (`busy`: seconds of loop work while each syncs), each followed by the
    floor (and `gap` seconds of idle loop): their wall times, the floor's, and each thread's
    CPU and context switches per batch (the floor's sync is the loop's: about 1 switch and
    its CPU)."""
    fd = os.open(path.parent / "floor.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    times, floor = [], []
    async with AuditChain(path, KEY, schemas=schemas_for(PLATFORMS)) as chain:
        for _ in range(20):
            await chain.emit_many(TURN)
        before = _threads()
        for i in range(n):
            start = time.perf_counter()
            task = asyncio.ensure_future(chain.emit_many(TURN))
            await asyncio.sleep(0)  # queued: the writer goes on while the loop works
            if busy:
                _busy(busy)
            await task
            times.append(time.perf_counter() - start)
            start = time.perf_counter()
            os.write(fd, b'{"seq": %d, "event": "message.answered"}\n' % i)
            os.fdatasync(fd)
            floor.append(time.perf_counter() - start)
            if gap:
                await asyncio.sleep(gap)
        after = _threads()
    os.close(fd)
    used = {
        k: ((v[0] - before.get(k, (0.0, 0))[0]) / n * 1e3, (v[1] - before.get(k, (0.0, 0))[1]) / n)
        for k, v in after.items()
        if k in before
    }
    shown = ", ".join(
        f"{k} {ms:.3f} ms {sw:.1f} cs"
        for k, (ms, sw) in sorted(used.items(), key=lambda kv: -kv[1][0])
        if ms >= 0.0005 or sw >= 0.05  # an idle helper (asyncio's to_thread) is left out
    )
    return times, floor, shown


def print_turn_batches(root: Path, n: int) -> None:
    rows = (
        ("loop idle", 0.0, 0.0),
        ("loop busy 0.3 ms", 0.0003, 0.0),
        ("busy 0.3, idle 2 ms", 0.0003, 0.002),
        ("busy 0.3, idle 25 ms", 0.0003, 0.025),
    )
    for label, busy, gap in rows:
        path = root / f"turn{int(busy * 1e6)}-{int(gap * 1e6)}" / "chain.jsonl"
        path.parent.mkdir(parents=True)
        times, floor, cpu = asyncio.run(turn_batches(path, n, busy, gap))
        mid, low = statistics.median(times) * 1e3, statistics.median(floor) * 1e3
        p90 = sorted(times)[len(times) * 9 // 10] * 1e3
        print(
            f"turn batch (3 events), {label:<19}: p50 {mid:.3f} ms, p90 {p90:.3f} ms, floor "
            f"p50 {low:.3f} ms ({mid / low:.1f}x)\n  per batch, each thread's CPU and context "
            f"switches: {cpu}"
        )


class _NoSync:
    """`os` for the chain's module with `fdatasync` a no-op: a knock-out row's, to measure
    what the chain's own sync costs (never a way to run the chain)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    @staticmethod
    def fdatasync(fd: int) -> None:
        return None


@contextlib.contextmanager
def _knocked_out(way: str) -> Iterator[None]:
    """`way`: "" as is; "head": the head's sync a no-op; "both": the chain's too."""
    real_sync, real_os = HeadFile.sync, chain_module.os
    if way in ("head", "both"):
        HeadFile.sync = lambda self: None  # type: ignore[method-assign]
    if way == "both":
        chain_module.os = _NoSync()  # type: ignore[assignment]
    try:
        yield
    finally:
        HeadFile.sync = real_sync  # type: ignore[method-assign]
        chain_module.os = real_os


async def _batches_cpu(path: Path, n: int, busy: float, gap: float) -> dict[str, float]:
    """CPU ms per batch of the process and of each thread, and the threads' voluntary
    switches per batch (`NAME cs`), of `n` turn batches `gap` seconds apart."""
    async with AuditChain(path, KEY, schemas=schemas_for(PLATFORMS)) as chain:
        for _ in range(20):
            await chain.emit_many(TURN)
        before, cpu = _threads(), time.process_time()
        for _ in range(n):
            task = asyncio.ensure_future(chain.emit_many(TURN))
            await asyncio.sleep(0)
            if busy:
                _busy(busy)
            await task
            await asyncio.sleep(gap)
        cpu, after = time.process_time() - cpu, _threads()
    out = {"process": cpu / n * 1e3}
    for name, (used, switches) in after.items():
        was = before.get(name, (used, switches))
        out[name] = (used - was[0]) / n * 1e3
        out[f"{name} cs"] = (switches - was[1]) / n
    return out


def print_sync_share(root: Path, n: int, rounds: int) -> None:
    """The 25 ms row's CPU per batch as is, with the head's sync a no-op and with both
    syncs no-ops, in alternating rounds (medians): what the kernel's two syncs cost a
    batch after a quiet spell (their system calls and wake-ups) and what the rest does
    (the writer's Python and short calls, cold after each sleep; the loop's hand-offs)."""
    ways = ("", "head", "both")
    got: dict[str, list[dict[str, float]]] = {way: [] for way in ways}
    for r in range(rounds):
        for way in ways if r % 2 == 0 else ways[::-1]:
            path = root / f"share{r}{way}" / "chain.jsonl"
            path.parent.mkdir(parents=True)
            with _knocked_out(way):
                got[way].append(asyncio.run(_batches_cpu(path, n, 0.0003, 0.025)))
    print(f"busy 0.3, idle 25 ms: CPU ms per batch, medians of {rounds} alternating rounds")
    labels = {"": "as is", "head": "head sync a no-op", "both": "both syncs no-ops"}
    for way in ways:

        def mid(key: str, way: str = way) -> float:
            return statistics.median(g.get(key, 0.0) for g in got[way])

        print(
            f"  {labels[way]:<18} process {mid('process'):.3f}, loop {mid('loop'):.3f} "
            f"({mid('loop cs'):.1f} cs), audit-writer {mid('audit-writer'):.3f} "
            f"({mid('audit-writer cs'):.1f} cs), head-sync {mid('head-sync'):.3f} "
            f"({mid('head-sync cs'):.1f} cs)"
        )


def _switches(name: str) -> int:
    """Voluntary context switches so far of the live thread called `name` (0: none)."""
    for thread in threading.enumerate():
        if thread.name == name and thread.native_id is not None:
            status = Path(f"/proc/self/task/{thread.native_id}/status").read_text()
            for line in status.splitlines():
                if line.startswith("voluntary_ctxt_switches"):
                    return int(line.split()[1])
    return 0


def print_head_cadence(root: Path) -> None:
    """The head's sync thread under puts every 2 ms and every 30 ms for a second each."""
    for gap in (0.002, 0.03):
        folder = root / f"head{int(gap * 1e3)}"
        folder.mkdir()
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        heads = HeadFile(folder / "chain.head", dir_fd, KEY)
        try:
            heads.put(1, GENESIS)  # the file made (synced inline)
            time.sleep(0.05)
            switches, syncs, puts = _switches("head-sync"), heads.syncs, int(1 / gap)
            for seq in range(2, puts + 2):
                heads.put(seq, GENESIS)
                time.sleep(gap)
            switches, syncs = _switches("head-sync") - switches, heads.syncs - syncs
        finally:
            heads.close()
            os.close(dir_fd)
        print(
            f"head puts every {gap * 1e3:2.0f} ms: {puts} puts, {syncs} head syncs, "
            f"{switches / puts:.2f} head-sync context switches per put "
            f"({switches / max(1, syncs):.1f} per sync)"
        )


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
    ap.add_argument("--turns", type=int, default=1000, help="turn batches timed")
    ap.add_argument("--turns-only", action="store_true", help="only the turn batch rows")
    ap.add_argument("--rss", default="", help="comma-separated chain lengths; only RSS")
    ap.add_argument("--verify-child", default="", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="tiny sizes (CI: it still runs)")
    args = ap.parse_args()
    if args.quick:
        args.records, args.appends, args.turns = 2_000, 20, 50
    if args.verify_child:
        _verify_child(args.verify_child)
        return
    if args.rss:
        with tempfile.TemporaryDirectory() as tmp:
            peak_rss(Path(tmp), [int(x) for x in args.rss.split(",")])
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        print_turn_batches(root, args.turns)
        print_head_cadence(root)
        print_sync_share(root, max(20, args.turns // 3), 1 if args.quick else 3)
        if args.turns_only:
            return
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
