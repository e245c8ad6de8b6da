"""The machine's own speed: the yardstick to read the other benches' absolute figures by.

The targets of the speed issue mix ratios measured in one run (roost next to
a floor) with absolute figures (`core.handle` p50 under 1 ms, 1,000 turns/s,
a sandboxed call under 2 ms, 500 calls/s). Absolute figures move with the
machine: on two machines of the same kind (2 cores, load under 1), a fresh
`python -I` took 17 ms on one and 55 ms on another, and `core.handle` 0.57
and 1.5 ms. The load average does not show that. This prints what such a
machine does with work of each kind the benches lean on, so that a reader can
tell a slower machine from a slower roost:

- pure Python: a fixed interpreter workload (dicts, f-strings, calls, a sort
  with a key function), ms per run;
- a fresh `python -I -c pass` (process creation and interpreter start);
- a system call (`getppid`, which no C library caches): the price of
  entering the kernel, which CPU-bug mitigations can raise many times over;
- `os.fork` of this process with the child exiting at once, until reaped;
- page faults: µs per first write to a page of fresh anonymous memory;
- one appended line + `fdatasync` (the audit chain's durable floor).

Each figure is the median of several runs; no thresholds. `speed_line()`
is the one-line version other benches print at their start (pure Python
only: about 0.1 s).

Run: .venv/bin/python -m bench.machine [--quick]
"""

from __future__ import annotations

import argparse
import mmap
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

PAGE = mmap.PAGESIZE


def workload() -> int:
    """A fixed pure-Python workload, the same every run (11-14 ms on the slower
    machine of docs/scaling.md)."""
    counts: dict[str, int] = {}
    for i in range(20_000):
        key = f"k{i % 1_000}"
        counts[key] = counts.get(key, 0) + len(key)
    ranked = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]))
    return sum(v for _, v in ranked) + len(",".join(k for k, _ in ranked))


def median_ms(run: Callable[[], object], runs: int) -> float:
    """Median wall ms of `runs` calls of `run` (one call first, not counted: warm-up)."""
    run()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def python_ms(runs: int = 5) -> float:
    return median_ms(workload, runs)


def fresh_python_ms(runs: int = 11) -> float:
    cmd = [sys.executable, "-I", "-c", "pass"]
    return median_ms(lambda: subprocess.run(cmd, check=True), runs)


def syscall_us(calls: int = 20_000, runs: int = 7) -> float:
    """µs per `getppid` (a Python loop around it: the loop's own cost included)."""
    getppid = os.getppid

    def one() -> None:
        for _ in range(calls):
            getppid()

    return median_ms(one, runs) * 1000 / calls


def fork_ms(runs: int = 51) -> float:
    def one() -> None:
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)

    return median_ms(one, runs)


def fault_us(pages: int = 2_560, runs: int = 7) -> float:
    """µs per page fault: the first write to each page of `pages` fresh anonymous pages."""

    def one() -> None:
        with mmap.mmap(-1, pages * PAGE) as memory:
            for offset in range(0, pages * PAGE, PAGE):
                memory[offset] = 1

    return median_ms(one, runs) * 1000 / pages


def fdatasync_ms(folder: Path, runs: int = 51) -> float:
    path = folder / "machine-fdatasync.log"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        line = b'{"event":"bench.machine","n":0}\n'
        return median_ms(lambda: (os.write(fd, line), os.fdatasync(fd)), runs)
    finally:
        os.close(fd)
        path.unlink()


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def speed_line() -> str:
    """One line for another bench's header: the pure-Python figure and the load."""
    return (
        f"machine: a fixed pure-Python workload {python_ms():.1f} ms (bench.machine); load {load()}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs (CI)")
    args = parser.parse_args()
    scale = 3 if args.quick else 1
    print(f"machine: {os.cpu_count()} cores, {os.uname().release}, load {load()}")
    print(f"  pure Python (fixed workload)  {python_ms(max(3, 7 // scale)):8.2f} ms")
    print(f"  fresh python -I -c pass       {fresh_python_ms(max(3, 11 // scale)):8.2f} ms")
    print(f"  system call (getppid)         {syscall_us(runs=max(3, 7 // scale)):8.3f} µs")
    print(f"  fork + exit + reap            {fork_ms(max(5, 51 // scale)):8.3f} ms")
    print(f"  page fault (first write)      {fault_us(runs=max(3, 7 // scale)):8.3f} µs")
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:  # the disk roost writes to
        synced = fdatasync_ms(Path(tmp), max(5, 51 // scale))
    print(f"  line + fdatasync              {synced:8.3f} ms")
    print(f"load at end {load()}")


if __name__ == "__main__":
    main()
