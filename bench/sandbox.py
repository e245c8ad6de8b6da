"""Benchmark the sandbox: plain exec (the floor), a sandboxed call, a fresh
`python -I` subprocess; p50/p99 and same-run ratios; sustained calls/s with two
concurrent callers; resident memory of a helper and its zygote; the first call
of a new tenant (which starts that tenant's own helper).

A new tenant takes the spare helper and a new spare starts in the background;
its first call is measured once the spare runs, and back to back (a tenant
arriving while the spare still starts waits for it).

`--stages` instead runs each tool with `SandboxRunner(trace=True)` and prints the
median time (ms since `run()` began) at which each stage of a call ended:
runner lint/schema check, the call written into a child the helper lent the
runner (`runner_handed`, forge.protocol.lending: the runner then tells the helper,
`runner_sent`) or else request sent and helper received/ready/handed over, the
child's job decoded, Landlock (only in a child forked before its helper's
first call: later children enforce it with their helper's workspace while they
wait, forge.zygote), descriptors, rlimits, call's globals bound, tool ran,
result serialised, helper had the complete result frame (helper_result;
helper_eof when a child died first)/replied, runner done.

`--stages` runs it twice, taking turns: with waiting children that warm their
call's path, without (`SandboxRunner(warm_children=False)`), and with the call's
path keeping the default time slice (`SandboxRunner(short_slices=False)`). It also prints
each child stage's median minor page faults and CPU time (`SandboxRunner.cpu()`:
user and system µs, from the same getrusage) and, per call, the CPU time, minor
page faults and context switches of the runner, the helper, the zygote and the
children (from /proc: the zygote reaps the children, so their totals are its
`c*` fields), and what a child costs after its answer (its exit, which back to
back runs beside the next call: the children's totals less their CPU and faults
at "serialised").

The sustained run also prints its CPU time per call, process by process (the
runner, the helper, the zygote, the children), with the calls/s that CPU allows
on this machine's cores: the bound the 500 calls/s of issue 26 meets. Its two
callers' calls overlap, so the helper's children skip the warm-up there whatever
the runner (forge.child_pool `ChildPool.overlap`): its "children not warmed" row
differs from the first only by the children forked before the calls overlapped.

The trivial tool names no way to read a file, so after a few of its calls the
helper's next children leave the reading path out of their warm-up
(forge.child_pool `ReadingHint`; `--stages` shows them as "ready_not_reading"), and
the first CSV calls after a trivial block find such a child.

`--hog N`: run the measurements a second time beside N busy loops and print both
(the machine's load average is printed next to every figure).

Back-to-back calls (each call's child forked and prepared while the one before
runs) are printed next to calls 20 ms apart (as a turn's tool calls come, a
model's step between them: the waiting child is ready). Each sandboxed figure is
also printed next to the same calls with waiting children that do not warm
their call's path (`SandboxRunner(warm_children=False)`, the path before this
round of issue 26) and with the helper relaying every answer
(`SandboxRunner(direct_answers=False)`, the path before issue 26's first round)
and with the helper and the child handed a call keeping the default time slice
(`SandboxRunner(short_slices=False)`, forge.confine.sched, the path before this
round), measured in alternating blocks in the same run.

`--callers` (also after the measurements of a plain run) runs two concurrent callers
traced: how many calls found no waiting child (forge.child_pool) and waited for a
fork, how long each kind waited for its child, how much of the time the two
calls' children ran at once, the stages and the CPU per call of each process
(`--children N`: N children forked ahead instead of the default).

`--forks` measures the zygote alone, in a process started like a helper: it forks
children that are closed at once (no call), and prints the zygote's mappings,
anonymous memory and RSS (what every fork copies and every exit tears down; the
anonymous part by kind: Python's arenas with malloc's large blocks, malloc's heap,
libpython's data, other shared objects' data, the stack), then
its CPU and minor page faults per fork beside its children's (their waiting path
and exit), three batches of 300 (50 with `--quick`): low noise, for changes to the
fork path. Then the kernel's floor beside it: a plain process with the zygote's
amount of anonymous memory (12 MiB) forking children that write 0 or 400 of its
pages (what a fork and an exit cost per MiB, and one copy-on-write fault).
Last, a child's exit alone: children forked from a process holding a helper's
heap, plain and with seccomp, Landlock or both, each timing itself just before
os._exit; wait4 gives the rest (the exit: unmapping what the fork copied).

`--quick`: a few calls of each kind (seconds; CI runs it so the script cannot rot).
Run: .venv/bin/python -m bench.sandbox [--quick | --stages | --forks | --callers [--children N]
[--cold]]
[--hog N]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.machine import speed_line
from forge.helper_process import helper_paths
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
TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "csv": (CSV_TOOL, {"path": "data.csv"}),
    "trivial": (TRIVIAL_TOOL, {"n": 7}),
}


GAP_S = 0.02


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


async def interleaved(
    runners: list[SandboxRunner], source: str, params: dict[str, Any], ws: Path, n: int
) -> list[list[float]]:
    """`n` calls on each runner, in alternating blocks (the same machine load)."""
    out: list[list[float]] = [[] for _ in runners]
    block = max(1, min(25, n // 4))
    while len(out[0]) < n:
        for times, runner in zip(out, runners, strict=True):
            times += await sandboxed(runner, source, params, ws, min(block, n - len(times)))
    return out


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


async def spaced(
    runner: SandboxRunner, source: str, params: dict[str, Any], ws: Path, n: int
) -> list[float]:
    """`n` calls `GAP_S` apart, as a turn's tool calls come (a model's step between
    them): the waiting child is ready, so this is the call's own path, without the
    fork and preparation of the next child competing with it."""
    times = []
    for _ in range(n):
        await asyncio.sleep(GAP_S)
        times += await sandboxed(runner, source, params, ws, 1)
    return times


async def interleaved_spaced(
    runners: list[SandboxRunner], source: str, params: dict[str, Any], ws: Path, n: int
) -> list[list[float]]:
    """`n` calls `GAP_S` apart on each runner, in alternating blocks."""
    out: list[list[float]] = [[] for _ in runners]
    block = max(1, min(10, n // 4))
    while len(out[0]) < n:
        for times, runner in zip(out, runners, strict=True):
            times += await spaced(runner, source, params, ws, min(block, n - len(times)))
    return out


async def sustained(
    runner: SandboxRunner, source: str, params: dict[str, Any], ws: Path, seconds: float
) -> float:
    return (await sustained_calls(runner, source, params, ws, seconds))[0]


async def sustained_calls(
    runner: SandboxRunner, source: str, params: dict[str, Any], ws: Path, seconds: float
) -> tuple[float, int]:
    """Calls/s with two concurrent callers for `seconds`, and the number of calls."""
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
    return done / (time.perf_counter() - t), done


async def new_tenants(
    runner: SandboxRunner, base: Path, n: int, spare_ready: bool
) -> tuple[list[float], list[float]]:
    """The first call in each of `n` new workspaces (each tenant gets its own helper),
    and the CPU its helper used up to the end of that call (ms; the helper's own, not
    its zygote's or children's). `spare_ready`: each arrives once the spare helper
    runs (`runner.start()` waits for it); else they come back to back and may wait
    for the spare's start-up."""
    times, cpu = [], []
    for i in range(n):
        ws = Path(tempfile.mkdtemp(prefix=f"forge-bench-tenant{i}-", dir=base))
        if spare_ready:
            await runner.start()
        t = time.perf_counter()
        res = await runner.run(TRIVIAL_TOOL, {"n": 3}, ws)
        times.append((time.perf_counter() - t) * 1000)
        assert res.ok, res
        cpu.append(on_cpu_ms(runner.helper_pid(ws)))
    return times, cpu


def on_cpu_ms(pid: int | None) -> float:
    """The time `pid` has spent on a CPU (its schedstat, in ns: finer than stat's ticks)."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e6
    except (OSError, ValueError):
        return float("nan")


def rss_kib(pid: int, field: str = "VmRSS:", where: str = "status") -> int:
    try:
        lines = Path(f"/proc/{pid}/{where}").read_text().splitlines()
    except OSError:
        return 0
    for line in lines:
        if line.startswith(field):
            return int(line.split()[1])
    return 0


def children_of(pid: int) -> list[int]:
    """The processes whose parent is `pid` (a zygote's waiting and running children)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def helper_memory(helper: int | None) -> str:
    """RSS and PSS (shared pages split between the sharers) of one sandbox helper
    with its zygote and its waiting children."""
    kids = children_of(helper) if helper else []
    if not helper or len(kids) != 1:
        return "no helper"
    zygote = kids[0]  # the helper's only child
    kids = children_of(zygote)
    pids = [helper, zygote, *kids]
    rss = sum(rss_kib(p) for p in pids) / 1024
    pss = sum(rss_kib(p, "Pss:", "smaps_rollup") for p in pids) / 1024
    return (
        f"helper {rss_kib(helper) / 1024:.1f} + zygote {rss_kib(zygote) / 1024:.1f} + "
        f"{len(kids)} waiting children {sum(rss_kib(k) for k in kids) / 1024:.1f} MiB RSS; "
        f"all together {rss:.1f} MiB RSS, {pss:.1f} MiB PSS"
    )


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def proc_usage(pid: int) -> dict[str, int]:
    """CPU ticks, minor faults and context switches of `pid` and of its reaped children."""
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    status = Path(f"/proc/{pid}/status").read_text()
    switches = [int(line.split()[1]) for line in status.splitlines() if "ctxt_switches" in line]
    return {
        "minflt": int(stat[7]),
        "cminflt": int(stat[8]),
        "cpu": int(stat[11]) + int(stat[12]),
        "ccpu": int(stat[13]) + int(stat[14]),
        "csw": sum(switches),
    }


def usage_rows(
    before: dict[str, dict[str, int]], after: dict[str, dict[str, int]], n: int
) -> float:
    """Print, per call, the CPU time, minor faults and context switches of each
    process (and of the children, which the zygote reaps); the CPU ms of all."""
    ms = 1000 / os.sysconf("SC_CLK_TCK")

    def per(who: str, key: str) -> float:
        return (after[who][key] - before[who][key]) / n

    total = 0.0
    for who in after:
        total += per(who, "cpu") * ms
        print(
            f"  {who:8s} cpu {per(who, 'cpu') * ms:6.3f} ms  minor faults {per(who, 'minflt'):6.1f}"
            f"  context switches {per(who, 'csw'):5.2f}  per call"
        )
    child_cpu = per("zygote", "ccpu") * ms
    faults = per("zygote", "cminflt")
    print(f"  children cpu {child_cpu:6.3f} ms  minor faults {faults:6.1f}  per call")
    print(f"  all processes: {total + child_cpu:.3f} ms CPU per call ({load()})")
    return total + child_cpu


def print_after_answer(
    before: dict[str, dict[str, int]],
    after: dict[str, dict[str, int]],
    cpu: list[dict[str, int]],
    faults: list[dict[str, int]],
) -> None:
    """What a child costs after its answer, mostly its exit (tearing down its copy of
    the zygote's address space): the children's CPU and faults per call (the zygote
    reaps them) less a child's mean at "serialised". Back to back it runs beside
    the next call."""
    n = len(cpu)
    done = [r["serialised"] for r in cpu if "serialised" in r]
    done_faults = [r["serialised"] for r in faults if "serialised" in r]
    if not n or not done or not done_faults:
        return
    tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
    child_us = (after["zygote"]["ccpu"] - before["zygote"]["ccpu"]) * tick_us / n
    child_faults = (after["zygote"]["cminflt"] - before["zygote"]["cminflt"]) / n
    print(
        f"  a child after its answer (its exit): about "
        f"{child_us - statistics.mean(done):.0f} µs of CPU, "
        f"{child_faults - statistics.mean(done_faults):.0f} minor faults a call"
    )


def print_faults(rows: list[dict[str, int]], what: str = "minor page faults") -> None:
    """The median minor page faults (or CPU µs, `what`) of a child in each of its
    stages: before the call arrives (off the call's path when the child waits
    ready) and after."""
    names: list[str] = []
    for row in rows:
        names += [k for k in row if k not in names]
    print(f"  child's {what}, median per stage:")
    prev = None
    for k in names:
        deltas: list[float] = [r[k] - r[prev] for r in rows if k in r and prev in r] if prev else []
        at = statistics.median(r[k] for r in rows if k in r)
        step = f"+{statistics.median(deltas):.0f}" if deltas else "from the fork"
        print(f"    {k:16s} {at:7.0f}   ({step})")
        prev = k
    after = [r["serialised"] - r["ready"] for r in rows if "serialised" in r and "ready" in r]
    if after:
        print(f"    after the call arrived: {statistics.median(after):.0f} (on the call's path)")


def print_stages(rows: list[dict[str, float]]) -> None:
    """Each stage's end, median ms since run() began, in time order, and the stage's own
    length call by call (its end less the stage before it in the same call): median
    and p90. (The difference of two stages' medians is not the median of their
    differences: it once put 0.43 ms on a stage that was 0.05 ms in the median call.)"""
    names: list[str] = []
    for row in rows:  # a mark only some calls have is no stage
        names += [k for k in row if k not in names and k != "helper_none_waiting"]
    order = sorted(names, key=lambda k: statistics.median(r[k] for r in rows if k in r))
    print(f"  {'stage':16s} {'ends at':>8s}   own length: median      p90")
    for k in order:
        at = statistics.median(r[k] for r in rows if k in r)
        own = [
            r[k] - max((r[n] for n in order if n in r and r[n] < r[k]), default=0.0)
            for r in rows
            if k in r
        ]
        print(f"  {k:16s} {at:8.3f}   {statistics.median(own):19.3f} {pct(own, 0.9):8.3f}")


def process_pids(runner: SandboxRunner, ws: Path) -> dict[str, int]:
    """The pids of a call's processes but its child: runner (this one), helper, zygote."""
    return {
        "runner": os.getpid(),
        "helper": runner.helper_pid(ws) or 0,
        "zygote": runner.zygote_pid(ws) or 0,
    }


async def stages(ws: Path, n: int = 300, warm: bool = True, slices: bool = True) -> None:
    runner = SandboxRunner(trace=True, warm_children=warm, short_slices=slices)
    await runner.start()
    try:
        for name, (source, params) in TOOLS.items():
            await sandboxed(runner, source, params, ws, 20)
            first = len(runner.stages())
            pids = process_pids(runner, ws)
            before = {who: proc_usage(pid) for who, pid in pids.items()}
            await sandboxed(runner, source, params, ws, n)
            after = {who: proc_usage(pid) for who, pid in pids.items()}
            rows = runner.stages()[first:]
            faults = runner.faults()[first:]
            cpu = runner.cpu()[first:]
            how = ("" if warm else ", children not warmed") + ("" if slices else ", default slices")
            print(f"\n[{name} tool{how}] stage ends, median ms since run() began (n={len(rows)})")
            print_stages(rows)
            print_faults(faults)
            print_faults(cpu, "CPU time (user + system, µs)")
            usage_rows(before, after, n)
            print_after_answer(before, after, cpu, faults)
    finally:
        await runner.aclose()


def overlap(starts: list[int], rows: list[dict[str, float]]) -> tuple[int, int]:
    """Nanoseconds during which two children ran their calls at once, and one alone
    (a child runs from "job" to "serialised"; `starts`: each row's run() start)."""
    edges: list[tuple[int, int]] = []
    for t0, r in zip(starts, rows, strict=True):
        if "job" in r and "serialised" in r:
            edges += [(t0 + int(r["job"] * 1e6), 1), (t0 + int(r["serialised"] * 1e6), -1)]
    edges.sort()
    running, last, spans = 0, 0, [0, 0, 0]
    for at, step in edges:
        if last:
            spans[min(running, 2)] += at - last
        running, last = running + step, at
    return spans[2], spans[1]


async def callers(ws: Path, seconds: float, children: int | None = None, warm: bool = True) -> None:
    """Two concurrent callers of the CSV tool for `seconds`, traced: calls/s, how
    often a call found no waiting child (it waits for a fork), how long its child
    took to receive it, whether the two calls' children run at once, and the CPU
    per call of each process."""
    runner = SandboxRunner(trace=True, idle_children=children, warm_children=warm)
    await runner.start()
    try:
        await sandboxed(runner, CSV_TOOL, {"path": "data.csv"}, ws, 20)
        first = len(runner.stages())
        pids = process_pids(runner, ws)
        before = {who: proc_usage(pid) for who, pid in pids.items()}
        starts: list[int] = []  # run() start (ns) of each call, in the order they ended
        stop = time.perf_counter() + seconds

        async def caller() -> None:
            while time.perf_counter() < stop:
                t = time.perf_counter_ns()
                res = await runner.run(CSV_TOOL, {"path": "data.csv"}, ws)
                starts.append(t)  # no await since run() recorded its stages: same order
                assert res.ok, res

        t = time.perf_counter()
        await asyncio.gather(caller(), caller())
        rate = len(starts) / (time.perf_counter() - t)
        after = {who: proc_usage(pid) for who, pid in pids.items()}
        rows = runner.stages()[first:]
        label = "" if children is None else f", {children} children forked ahead"
        label += "" if warm else ", children not warmed"
        print(f"\n[2 callers, csv tool{label}] {rate:.0f} calls/s (n={len(rows)}, {load()})")
        waited = [r for r in rows if "helper_none_waiting" in r]
        print(f"  calls that found no waiting child: {len(waited)} ({len(waited) / len(rows):.0%})")
        ready = [r for r in rows if "helper_none_waiting" not in r]
        lent = [r for r in ready if "runner_handed" in r]  # the runner wrote the job itself
        helped = [r for r in ready if "runner_handed" not in r]
        for how, group, start in (
            ("no child waiting", waited, "helper_ready"),
            ("a child waiting", helped, "helper_ready"),
            ("a lent child", lent, "runner_handed"),
        ):
            gaps = [r["job"] - r[start] for r in group if "job" in r and start in r]
            if gaps:
                p50, p99 = statistics.median(gaps), pct(gaps, 0.99)
                print(
                    f"  {how:17s}: {start.replace('_', ' ')} -> child has the job p50 "
                    f"{p50:.3f} ms, p99 {p99:.3f} ms (n={len(gaps)})"
                )
        total = [r["runner_done"] for r in rows]
        print(f"  call p50 {statistics.median(total):.3f} ms, p99 {pct(total, 0.99):.3f} ms")
        both, alone = overlap(starts, rows)
        print(
            f"  a child running its call {(both + alone) / 1e9 / seconds:.0%} of the time; "
            f"two at once {both / max(both + alone, 1):.0%} of that (0 %: calls serialised)"
        )
        print("  stage ends, median ms since run() began:")
        print_stages(rows)
        usage_rows(before, after, len(rows))
    finally:
        await runner.aclose()


# Run in a process started like a helper (`python -I -S`, the helper's modules and
# prepare()): its zygote forks `n` children a batch, each closed at once (a waiting
# child exits when its go pipe closes), and the zygote's own CPU and minor faults
# per fork are printed beside its children's (their waiting path and exit).
_FORKS = """
import os, select, sys
import forge.worker  # the helper's modules: the zygote's heap is a helper's
from forge.warmup import prepare
from forge.zygote import Zygote

def usage(pid):
    st = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(st[7]), int(st[8]), int(st[11]) + int(st[12]), int(st[13]) + int(st[14])

def batch(z, n, show=True):
    before = usage(z.pid)
    for _ in range(n):
        for fd in z.fork_child().fds():
            os.close(fd)
        z.read_reports()
    while len(z.exits) < n:  # every child's exit report
        select.select([z.sock], [], [])
        z.read_reports()
    z.exits.clear()
    after = usage(z.pid)
    tick = 1000 / os.sysconf("SC_CLK_TCK")
    d = [(a - b) / n for a, b in zip(after, before)]
    if show:
        print(f"  zygote faults {d[0]:5.1f} cpu {d[2] * tick:.3f} ms; children faults "
              f"{d[1]:5.1f} cpu {d[3] * tick:.3f} ms  per fork (load {os.getloadavg()[0]:.2f})")

def layout(pid):
    maps = open(f"/proc/{pid}/maps").read().splitlines()
    objects = {line.split()[-1] for line in maps if ".so" in line}
    rollup = dict(
        (line.split()[0].rstrip(":"), line.split()[1])
        for line in open(f"/proc/{pid}/smaps_rollup").read().splitlines()[1:]
    )
    print(f"  zygote: {len(maps)} mappings ({len(objects)} shared objects), anonymous "
          f"{int(rollup['Anonymous']) / 1024:.1f} MiB, RSS {int(rollup['Rss']) / 1024:.1f} MiB")
    print("  its anonymous memory (KiB):", ", ".join(f"{k} {v}" for k, v in anon_parts(pid)))

def anon_parts(pid):
    # what the anonymous memory is: Python's object arenas and malloc's large blocks
    # (unnamed mappings), malloc's heap, libpython's data, other objects' data, stack
    parts = {"arenas+mmapped": 0, "malloc heap": 0, "libpython data": 0, "other .so data": 0,
             "stack": 0}
    where = None
    for line in open(f"/proc/{pid}/smaps"):
        fields = line.split()
        if not fields[0].endswith(":"):
            name = fields[5] if len(fields) > 5 else ""
            where = ("malloc heap" if name == "[heap]" else "stack" if name == "[stack]"
                     else "arenas+mmapped" if not name else "libpython data"
                     if "libpython" in name else "other .so data")
        elif fields[0] == "Anonymous:" and where is not None:
            parts[where] += int(fields[1])
    return sorted(parts.items(), key=lambda kv: -kv[1])

ctx, _ = prepare()
z = Zygote.start(ctx)
n = int(sys.argv[1])
batch(z, 20, show=False)  # warm-up
layout(z.pid)
sys.stdout.flush()
for _ in range(int(sys.argv[2])):
    batch(z, n)
z.close()
"""


# The kernel's part alone, in a plain `python -I -S` (no forge): a parent holding
# `mib` MiB of private anonymous memory, every page written (as the zygote's heap),
# forks `n` children that write `pages` distinct pages of it and exit. Its CPU and
# faults per fork, with 0 and with N pages written, give what a fork and an exit
# cost per MiB of the parent and what one copy-on-write fault costs on this machine.
_FLOOR = """
import mmap, os, resource, sys
mib, pages, n = (int(a) for a in sys.argv[1:4])
flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
heap = mmap.mmap(-1, mib << 20, flags=flags) if mib else None
for i in range(0, mib << 20, 4096):
    heap[i] = 1

def run(n):
    child, me = resource.RUSAGE_CHILDREN, resource.RUSAGE_SELF
    c0, s0 = resource.getrusage(child), resource.getrusage(me)
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            for i in range(pages):
                heap[i * 4096] = 2
            os._exit(0)
        os.waitpid(pid, 0)
    c1, s1 = resource.getrusage(child), resource.getrusage(me)
    cpu = lambda a, b: (b.ru_utime + b.ru_stime - a.ru_utime - a.ru_stime) * 1000 / n
    print(cpu(s0, s1), cpu(c0, c1), (c1.ru_minflt - c0.ru_minflt) / n)

run(20 if n > 20 else 1)
run(n)
"""


# Run like `_FORKS` (a process holding a helper's heap): it forks `n` children per
# variant, taking turns, that apply the confinement layers named (seccomp,
# Landlock with a workspace) and exit at once. Each child sends its own CPU and
# faults just before os._exit; wait4 gives its total: the difference is the exit
# alone (unmapping what the fork copied, freeing its pages and tables).
_EXITS = """
import os, resource, struct, sys, tempfile
import forge.worker  # the helper's modules: the heap is a helper's
from forge.confine.landlock import create_ruleset, landlock_restrict
from forge.warmup import prepare

ctx, _ = prepare()
folder = tempfile.mkdtemp()
ws = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
ME = struct.Struct("dd")

def cpu(ru):
    return (ru.ru_utime + ru.ru_stime) * 1e6

def one(layers):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        if "seccomp" in layers and ctx.seccomp is not None:
            ctx.seccomp.install()
        if "landlock" in layers and ctx.ruleset is not None:
            landlock_restrict(ctx.landlock_abi, create_ruleset(ctx.ruleset), ws, ctx.ruleset)
        ru = resource.getrusage(resource.RUSAGE_SELF)
        os.write(w, ME.pack(cpu(ru), ru.ru_minflt))
        os._exit(0)
    os.close(w)
    own, faults = ME.unpack(os.read(r, ME.size))
    os.close(r)
    _, _, ru = os.wait4(pid, 0)
    return cpu(ru), cpu(ru) - own, ru.ru_minflt - faults

variants = ("plain", "seccomp", "landlock", "seccomp+landlock")
n = int(sys.argv[1])
got = {v: [] for v in variants}
for _ in range(n):
    for v in variants:
        got[v].append(one(v))
os.close(ws)
os.rmdir(folder)
anon = [l for l in open("/proc/self/smaps_rollup") if l.startswith("Anonymous:")]
print(f"  (the forking process: anonymous {int(anon[0].split()[1]) / 1024:.1f} MiB, "
      f"load {os.getloadavg()[0]:.2f})")
for v in variants:
    total, exit_, faults = (sorted(x[i] for x in got[v])[n // 2] for i in range(3))
    print(f"  {v:17s} child {total:5.0f} µs CPU, of which its exit {exit_:4.0f} µs "
          f"({faults:.0f} faults)  (medians)")
"""


def in_helper_heap(source: str, *args: int) -> str:
    """What `source` prints, run as a helper runs (`python -I -S`, the helper's import
    paths, an empty environment) with `args` on its command line."""
    program = f"import sys; sys.path[:0] = {helper_paths()!r}\n" + source
    argv = [sys.executable, "-I", "-S", "-c", program, *map(str, args)]
    return subprocess.run(argv, env={}, cwd="/", capture_output=True, text=True, check=True).stdout


def exits(n: int) -> None:
    """A child's exit alone, with and without seccomp and Landlock (`_EXITS`)."""
    print(f"\n[a child's exit, forked from a helper's heap, {n} of each, taking turns]")
    print(in_helper_heap(_EXITS, n), end="")


def floor_fork(mib: int, pages: int, n: int) -> tuple[float, float, float]:
    """(parent ms, child ms, child faults) per fork for `_FLOOR`."""
    argv = [sys.executable, "-I", "-S", "-c", _FLOOR, str(mib), str(pages), str(n)]
    out = subprocess.run(argv, env={}, cwd="/", capture_output=True, text=True, check=True)
    parent, child, faults = (float(x) for x in out.stdout.split("\n")[-2].split())
    return parent, child, faults


def forks(n: int = 300, batches: int = 3, mib: int = 12, pages: int = 400) -> None:
    """The zygote's per-fork cost alone: no runner, no helper loop, no calls; then
    the kernel's floor: a plain process with `mib` MiB of anonymous memory (about
    the zygote's) forking children that write 0 or `pages` of its pages."""
    print(f"\n[zygote forks, {n} a batch, each child closed at once]")
    print(in_helper_heap(_FORKS, n, batches), end="")
    print(f"\n[the kernel's floor: a plain process, {n} forks a row ({load()})]")
    bare = floor_fork(0, 0, n)
    empty = floor_fork(mib, 0, n)
    written = floor_fork(mib, pages, n)
    print(f"  no heap, child writes nothing: parent {bare[0]:.3f} ms, child {bare[1]:.3f} ms")
    print(
        f"  {mib} MiB heap, child writes nothing: parent {empty[0]:.3f} ms, child "
        f"{empty[1]:.3f} ms ({(empty[0] + empty[1] - bare[0] - bare[1]) / mib * 1000:.0f} "
        "µs a MiB for the fork and the exit)"
    )
    extra = written[2] - empty[2]
    per_fault = (written[1] - empty[1]) / extra * 1000 if extra > 0 else 0.0
    print(
        f"  {mib} MiB heap, child writes {pages} pages: child {written[1]:.3f} ms, "
        f"{written[2]:.0f} faults ({per_fault:.2f} µs a copy-on-write fault)"
    )


def start_hogs(n: int) -> list[subprocess.Popen[bytes]]:
    """`n` busy loops (CPU hogs) beside the measurement."""
    return [subprocess.Popen([sys.executable, "-I", "-c", "while True: pass"]) for _ in range(n)]


def stop_hogs(hogs: list[subprocess.Popen[bytes]]) -> None:
    for hog in hogs:
        hog.kill()
        hog.wait()


async def main() -> None:
    """Every workspace (the calls' and each new tenant's) lives in one temporary folder,
    removed at the end."""
    with tempfile.TemporaryDirectory(prefix="forge-bench-") as base:
        ws = Path(base) / "ws"
        ws.mkdir()
        await measure_all(ws)


async def measure_all(ws: Path) -> None:
    rows = "\n".join(f"{i},{i * 2},{i % 7}" for i in range(100))
    (ws / "data.csv").write_text("a,b,c\n" + rows + "\n")
    args = sys.argv[1:]
    if "--forks" in args:
        forks(50, 1) if "--quick" in args else forks()
        exits(50 if "--quick" in args else 300)
        return
    if "--callers" in args:
        ahead = int(args[args.index("--children") + 1]) if "--children" in args else None
        await callers(ws, 0.5 if "--quick" in args else 3.0, ahead, "--cold" not in args)
        return
    if "--stages" in args:
        for _ in range(2):  # warmed and not, short slices and not, taking turns
            await stages(ws, warm=True)
            await stages(ws, warm=False)
            await stages(ws, slices=False)
            if "--quick" in args:
                break
        return
    hogs = int(args[args.index("--hog") + 1]) if "--hog" in args else 0
    print(speed_line())
    print(f"\n=== quiet ({load()}) ===")
    await measure(ws, "--quick" in args)
    await callers(ws, 0.5 if "--quick" in args else 3.0)
    if hogs:
        running = start_hogs(hogs)
        try:
            print(f"\n=== beside {hogs} busy loops ({load()}) ===")
            await measure(ws, "--quick" in args)
        finally:
            stop_hogs(running)


async def measure(ws: Path, quick: bool) -> None:
    n = (3, 20, 10, 5, 3, 0.5, 2) if quick else (20, 500, 300, 100, 30, 3.0, 8)
    warm, n_exec, n_sand, n_spaced, n_fresh, seconds, tenants = n
    runner = SandboxRunner()
    cold = SandboxRunner(warm_children=False)  # waiting children do not warm up
    relayed = SandboxRunner(direct_answers=False)  # before issue 26: the helper relays
    unsliced = SandboxRunner(short_slices=False)  # the call's path keeps the default slice
    execd = SandboxRunner(fork_helpers=False)  # every helper a fresh `python -I -S`
    for each in (runner, cold, relayed, unsliced):
        await each.start()
    missing = runner.missing_layers()
    print(f"layers missing on this machine: {missing or 'none'}")
    try:
        for name, (source, params) in TOOLS.items():
            for each in (runner, cold, relayed, unsliced):
                await sandboxed(each, source, params, ws, warm)  # warm caches
            floor = plain_exec(source, params, ws, n_exec)
            sand, unwarmed, hop, long_slice = await interleaved(
                [runner, cold, relayed, unsliced], source, params, ws, n_sand
            )
            apart, apart_cold, apart_long = await interleaved_spaced(
                [runner, cold, unsliced], source, params, ws, n_spaced
            )
            fresh = fresh_subprocess(source, params, ws, n_fresh)
            p50 = {
                k: statistics.median(v)
                for k, v in (("exec", floor), ("sandbox", sand), ("fresh", fresh))
            }
            print(f"\n[{name} tool] ({load()})")
            for label, values in (
                ("plain exec (floor)", floor),
                ("sandboxed call", sand),
                ("children not warmed", unwarmed),
                ("helper relays answer", hop),
                ("default slices", long_slice),
                (f"{GAP_S * 1000:.0f} ms apart", apart),
                (f"  not warmed, {GAP_S * 1000:.0f} ms", apart_cold),
                (f"  default slices, {GAP_S * 1000:.0f}", apart_long),
                ("fresh python -I", fresh),
            ):
                print(
                    f"  {label:20s} p50 {statistics.median(values):8.3f} ms   "
                    f"p99 {pct(values, 0.99):8.3f} ms   (n={len(values)})"
                )
            print(f"  sandbox / floor  = {p50['sandbox'] / p50['exec']:.1f}x")
            print(
                f"  fresh / {GAP_S * 1000:.0f} ms apart = "
                f"{p50['fresh'] / statistics.median(apart):.1f}x faster than a fresh subprocess"
            )
            print(
                f"  fresh / sandbox  = {p50['fresh'] / p50['sandbox']:.1f}x faster than a "
                "fresh subprocess"
            )
            print(
                f"  not warmed / warmed = {statistics.median(unwarmed) / p50['sandbox']:.2f}x "
                f"back to back, {statistics.median(apart_cold) / statistics.median(apart):.2f}x "
                f"{GAP_S * 1000:.0f} ms apart (a waiting child warms its call's path)"
            )
            print(
                f"  relayed / direct = {statistics.median(hop) / p50['sandbox']:.2f}x "
                "(the child answers the runner itself: one hop fewer)"
            )
            print(
                f"  default / short slices = {statistics.median(long_slice) / p50['sandbox']:.2f}x "
                f"back to back, {statistics.median(apart_long) / statistics.median(apart):.2f}x "
                f"{GAP_S * 1000:.0f} ms apart (the call's path asks for a 0.1 ms slice)"
            )
        pids = process_pids(runner, ws)
        before = {who: proc_usage(pid) for who, pid in pids.items()}
        rate, calls = await sustained_calls(runner, CSV_TOOL, {"path": "data.csv"}, ws, seconds)
        after = {who: proc_usage(pid) for who, pid in pids.items()}
        print(f"\nsustained, 2 concurrent callers, csv tool: {rate:.0f} calls/s ({load()})")
        cpu = usage_rows(before, after, max(calls, 1))
        cores = os.cpu_count() or 1
        print(
            f"  the CPU bound: {cores} cores / {cpu:.3f} ms = "
            f"{cores * 1000 / cpu:.0f} calls/s at most (500 wanted: "
            f"{cores * 1000 / 500:.1f} ms of CPU per call at most)"
            if cpu
            else "  the CPU bound: no CPU time counted (too few calls)"
        )
        rate = await sustained(cold, CSV_TOOL, {"path": "data.csv"}, ws, seconds)
        print(f"  the same, children not warmed: {rate:.0f} calls/s ({load()})")
        rate = await sustained(relayed, CSV_TOOL, {"path": "data.csv"}, ws, seconds)
        print(f"  the same, the helper relaying answers: {rate:.0f} calls/s ({load()})")
        rate = await sustained(unsliced, CSV_TOOL, {"path": "data.csv"}, ws, seconds)
        print(f"  the same, default slices: {rate:.0f} calls/s ({load()})")
        print(f"one active sandbox helper: {helper_memory(runner.helper_pid(ws))}")
        await runner.start()  # the spare runs
        print(f"the runner's one spare helper: {helper_memory(runner.spare_pid())}")
        await execd.start()
        for ready, how in ((True, "the spare helper running"), (False, "back to back")):
            for each, what in ((runner, "forked from the template"), (execd, "exec'd")):
                first, helper_cpu = await new_tenants(each, ws.parent, tenants, ready)
                print(
                    f"first call of a new tenant ({how}; helpers {what}): p50 "
                    f"{statistics.median(first):.1f} ms, its helper's CPU p50 "
                    f"{statistics.median(helper_cpu):.1f} ms (n={len(first)}, {load()})"
                )
        print(f"a helper forked from the template: {helper_memory(runner.helper_pid())}")
        print(f"an exec'd helper: {helper_memory(execd.helper_pid())}")
        template = runner.template_pid()
        if template is not None:
            print(
                f"the helper template: {rss_kib(template) / 1024:.1f} MiB RSS, "
                f"{rss_kib(template, 'Pss:', 'smaps_rollup') / 1024:.1f} MiB PSS; "
                f"{runner.helpers_forked()} helpers forked"
            )
    finally:
        for each in (runner, cold, relayed, unsliced, execd):
            await each.aclose()


if __name__ == "__main__":
    asyncio.run(main())
