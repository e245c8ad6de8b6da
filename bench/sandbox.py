"""Benchmark the sandbox: plain exec (the floor), a sandboxed call, a fresh
`python -I` subprocess; p50/p99 and same-run ratios; sustained calls/s with two
concurrent callers; resident memory of a helper and its zygote; the first call
of a new tenant (which starts that tenant's own helper).

`--stages` instead runs each tool with `SandboxRunner(trace=True)` and prints the
median time (ms since `run()` began) at which each stage of a call ended:
runner lint/schema check, request sent, helper received/ready/handed over, the
child's job decoded, Landlock, descriptors, rlimits, capabilities, seccomp,
call's globals bound, tool ran, result serialised, helper had the complete result
frame (helper_result; helper_eof when a child died first)/replied, runner done.

`--quick`: a few calls of each kind (seconds; CI runs it so the script cannot rot).
Run: .venv/bin/python -m bench.sandbox [--quick | --stages]
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from forge.runner import SandboxRunner

CSV_TOOL = '''
import csv

def run(path: str) -> dict:
    """Sum every column of a CSV file."""
    totals = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            for key, value in row.items():
                totals[key] = totals.get(key, 0) + float(value)
    return totals
'''
TRIVIAL_TOOL = '''
def run(n: int) -> int:
    """Square a number."""
    return n * n
'''
TOOLS = {"csv": (CSV_TOOL, {"path": "data.csv"}), "trivial": (TRIVIAL_TOOL, {"n": 7})}


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def plain_exec(source: str, params: dict[str, Any], ws: Path, n: int) -> list[float]:
    import os

    code = compile(source, "<tool>", "exec")
    cwd = os.getcwd()
    os.chdir(ws)
    times = []
    try:
        for _ in range(n):
            t = time.perf_counter()
            glb: dict[str, Any] = {}
            exec(code, glb)
            glb["run"](**params)
            times.append((time.perf_counter() - t) * 1000)
    finally:
        os.chdir(cwd)
    return times


def fresh_subprocess(source: str, params: dict[str, Any], ws: Path, n: int) -> list[float]:
    script = f"{source}\nimport json\nprint(json.dumps(run(**{params!r})))\n"
    times = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-I", "-c", script], cwd=ws, check=True, capture_output=True
        )
        times.append((time.perf_counter() - t) * 1000)
    return times


async def sandboxed(
    runner: SandboxRunner, source: str, params: dict[str, Any], ws: Path, n: int
) -> list[float]:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        res = await runner.run(source, params, ws)
        times.append((time.perf_counter() - t) * 1000)
        assert res.ok, res
    return times


async def sustained(
    runner: SandboxRunner, source: str, params: dict[str, Any], ws: Path, seconds: float
) -> float:
    done = 0
    stop = time.perf_counter() + seconds

    async def caller() -> None:
        nonlocal done
        while time.perf_counter() < stop:
            res = await runner.run(source, params, ws)
            assert res.ok
            done += 1

    t = time.perf_counter()
    await asyncio.gather(caller(), caller())
    return done / (time.perf_counter() - t)


async def new_tenants(runner: SandboxRunner, base: Path, n: int) -> list[float]:
    """The first call in each of `n` new workspaces (each tenant gets its own helper)."""
    times = []
    for i in range(n):
        ws = Path(tempfile.mkdtemp(prefix=f"forge-bench-tenant{i}-", dir=base))
        t = time.perf_counter()
        res = await runner.run(TRIVIAL_TOOL, {"n": 3}, ws)
        times.append((time.perf_counter() - t) * 1000)
        assert res.ok, res
    return times


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def stages(ws: Path, n: int = 300) -> None:
    runner = SandboxRunner(trace=True)
    await runner.start()
    try:
        for name, (source, params) in TOOLS.items():
            await sandboxed(runner, source, params, ws, 20)
            runner.stages().clear()
            first = len(runner.stages())
            await sandboxed(runner, source, params, ws, n)
            rows = runner.stages()[first:]
            names: list[str] = []
            for row in rows:
                names += [k for k in row if k not in names]
            order = sorted(names, key=lambda k: statistics.median(r[k] for r in rows if k in r))
            print(f"\n[{name} tool] stage ends, median ms since run() began (n={len(rows)})")
            prev = 0.0
            for k in order:
                at = statistics.median(r[k] for r in rows if k in r)
                print(f"  {k:16s} {at:8.3f}   (+{at - prev:.3f})")
                prev = at
    finally:
        await runner.aclose()


async def main() -> None:
    ws = Path(tempfile.mkdtemp(prefix="forge-bench-"))
    rows = "\n".join(f"{i},{i * 2},{i % 7}" for i in range(100))
    (ws / "data.csv").write_text("a,b,c\n" + rows + "\n")
    if "--stages" in sys.argv[1:]:
        await stages(ws)
        return
    quick = "--quick" in sys.argv[1:]
    n = (3, 20, 10, 3, 0.5, 2) if quick else (20, 500, 300, 30, 3.0, 8)
    warm, n_exec, n_sand, n_fresh, seconds, tenants = n
    runner = SandboxRunner()
    await runner.start()
    missing = runner.missing_layers()
    print(f"layers missing on this machine: {missing or 'none'}")
    try:
        for name, (source, params) in TOOLS.items():
            await sandboxed(runner, source, params, ws, warm)  # warm caches
            floor = plain_exec(source, params, ws, n_exec)
            sand = await sandboxed(runner, source, params, ws, n_sand)
            fresh = fresh_subprocess(source, params, ws, n_fresh)
            p50 = {
                k: statistics.median(v)
                for k, v in (("exec", floor), ("sandbox", sand), ("fresh", fresh))
            }
            print(f"\n[{name} tool]")
            for label, values in (
                ("plain exec (floor)", floor),
                ("sandboxed call", sand),
                ("fresh python -I", fresh),
            ):
                print(
                    f"  {label:20s} p50 {statistics.median(values):8.3f} ms   "
                    f"p99 {pct(values, 0.99):8.3f} ms   (n={len(values)})"
                )
            print(f"  sandbox / floor  = {p50['sandbox'] / p50['exec']:.1f}x")
            print(
                f"  fresh / sandbox  = {p50['fresh'] / p50['sandbox']:.1f}x faster than a "
                "fresh subprocess"
            )
        rate = await sustained(runner, CSV_TOOL, {"path": "data.csv"}, ws, seconds)
        print(f"\nsustained, 2 concurrent callers, csv tool: {rate:.0f} calls/s")
        pid = runner.helper_pid(ws)
        if pid:
            print(f"helper RSS: {rss_kib(pid) / 1024:.1f} MiB")
        zygote = getattr(runner, "zygote_pid", lambda _: None)(ws)
        if zygote:
            print(f"zygote RSS: {rss_kib(zygote) / 1024:.1f} MiB (shares pages with its helper)")
        first = await new_tenants(runner, ws.parent, tenants)
        print(
            f"first call of a new tenant (own helper started): p50 "
            f"{statistics.median(first):.1f} ms (n={len(first)})"
        )
    finally:
        await runner.aclose()


if __name__ == "__main__":
    asyncio.run(main())
