"""Where `make test` spends CPU: an opt-in pytest plugin and its summary, per file or folder.

Record (each xdist worker writes one file; nothing is recorded without `-p`):

    CPU_PROFILE_DIR=/tmp/cpu make test PYTEST_ARGS="-p tests.cpu_profile"

Summarise (`depth` 2: per folder, 9: per file; the top `rows`):

    .venv/bin/python -m tests.cpu_profile /tmp/cpu [depth] [rows]

or see how busy the workers and the cores were over the run, in `step`-second rows
(`timeline`), and which tests ran last on each worker:

    .venv/bin/python -m tests.cpu_profile /tmp/cpu timeline [step] [cores]

Per test it records the worker's own CPU (RUSAGE_SELF, all its threads) and that of
its children (RUSAGE_CHILDREN: daemons, CLI commands, sandbox workers), both from
setup to teardown, the wall time, and how many processes the test started through
`subprocess` and how many of them were roost's (`python -m bridge.cli.main`: daemons and
commands, forked or not; counted by tests/forkserver.py's hook, so none with
ROOST_TEST_FRESH=1). A child counts once it is reaped: a session
server (Synapse, the browser) lands on the worker's last test. PostgreSQL's
servers detach, so their CPU is in no row: read it from their postmaster's /proc
stat while they run. Each worker's last line, `#END`, is its whole run, collection
included.

Each row also has the test's start (epoch seconds) and `#END` the worker's end. The
controller's file (main.tsv) has the run's start (`#START`) and, once a second, how
many core-seconds the whole machine has left idle since then (`#IDLE`, from
/proc/stat: exact on a quiet machine only, as another program's CPU fills the cores
too). The timeline also spreads each test's CPU evenly over its wall time: an
estimate of the idle cores that needs no quiet machine, but misses the servers' CPU
where it was spent (a session server's counts on its worker's last test, and
PostgreSQL's nowhere).
"""

from __future__ import annotations

import collections
import glob
import os
import resource
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO

import pytest


def _starts() -> tuple[int, int]:
    from tests import forkserver

    return forkserver.spawned, forkserver.roost_starts


def _machine_idle() -> float:
    """Core-seconds the whole machine has been idle since boot (/proc/stat: idle and
    iowait); 0.0 where there is no /proc."""
    try:
        with open("/proc/stat") as fh:
            fields = fh.readline().split()
    except OSError:
        return 0.0
    return (int(fields[4]) + int(fields[5])) / os.sysconf("SC_CLK_TCK")


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


class _Recorder:
    def __init__(self, folder: str) -> None:
        os.makedirs(folder, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.out: TextIO = open(os.path.join(folder, f"{worker}.tsv"), "a", buffering=1)  # noqa: SIM115
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.sampler: threading.Thread | None = None
        if worker == "main":
            self.row("#START", 0.0, 0.0, 0.0, at=time.time())
            # a daemon thread: a run that ends without pytest_unconfigure still exits
            self.sampler = threading.Thread(
                target=self._sample, args=(_machine_idle(),), daemon=True
            )
            self.sampler.start()

    def _sample(self, idle0: float) -> None:
        """The controller's `#IDLE` rows: the machine's idle core-seconds since the start."""
        while not self.done.wait(1.0):
            self.row("#IDLE", _machine_idle() - idle0, 0.0, 0.0, at=time.time())

    def row(
        self,
        name: str,
        own: float,
        kids: float,
        wall: float,
        starts: tuple[int, int] = (0, 0),
        at: float = 0.0,
    ) -> None:
        with self.lock:
            self.out.write(
                f"{name}\t{own:.4f}\t{kids:.4f}\t{wall:.4f}\t{starts[0]}\t{starts[1]}\t{at:.3f}\n"
            )


_recorder: list[_Recorder] = []


def pytest_configure(config: pytest.Config) -> None:
    _recorder.append(_Recorder(os.environ.get("CPU_PROFILE_DIR", "/tmp/roost-cpu-profile")))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    own0, kids0 = _cpu()
    procs0, roost0 = _starts()
    wall0, at = time.monotonic(), time.time()
    yield
    own1, kids1 = _cpu()
    procs1, roost1 = _starts()
    wall = time.monotonic() - wall0
    _recorder[0].row(
        item.nodeid, own1 - own0, kids1 - kids0, wall, (procs1 - procs0, roost1 - roost0), at
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    recorder = _recorder[0]
    if recorder.sampler is not None:
        recorder.done.set()
        recorder.sampler.join()
    own, kids = _cpu()
    recorder.row("#END", own, kids, 0.0, at=time.time())
    recorder.out.close()


def summary(folder: str, depth: int = 2, rows: int = 40) -> list[str]:
    """The table: per key (the test file's path cut to `depth` parts), tests, seconds, and
    the processes started (all, and roost's)."""
    sums: dict[str, list[float]] = collections.defaultdict(lambda: [0.0] * 6)
    ends = [0.0, 0.0]
    for path in glob.glob(os.path.join(folder, "*.tsv")):
        with open(path) as fh:
            for line in fh:
                name, own, kids, wall, *starts = line.rstrip("\n").split("\t")
                if name in ("#START", "#IDLE"):
                    continue
                if name == "#END":
                    if not path.endswith("main.tsv"):
                        ends[0] += float(own)
                        ends[1] += float(kids)
                    continue
                key = "/".join(name.split("::")[0].split("/")[:depth])
                values = (1.0, float(own), float(kids), float(wall), *map(float, starts[:2]))
                for i, value in enumerate(values):  # a file of before the starts: 4 values
                    sums[key][i] += value
    tests, own_in, kids_in = (sum(s[i] for s in sums.values()) for i in range(3))
    lines = [
        f"{int(tests)} tests: worker CPU {own_in:.1f} s in tests, children {kids_in:.1f} s; "
        f"workers' whole runs: {ends[0]:.1f} s own, {ends[1]:.1f} s children",
        f"{'file or folder':60} {'tests':>5} {'own':>7} {'child':>7} {'cpu':>7} {'wall':>7}"
        f" {'procs':>5} {'roost':>5}",
    ]
    ranked = sorted(sums.items(), key=lambda kv: -(kv[1][1] + kv[1][2]))[:rows]
    for key, (n, o, k, w, procs, roost) in ranked:
        lines.append(
            f"{key:60} {int(n):5d} {o:7.1f} {k:7.1f} {o + k:7.1f} {w:7.1f}"
            f" {int(procs):5d} {int(roost):5d}"
        )
    return lines


def _read_timeline(
    folder: str,
) -> tuple[
    dict[str, list[tuple[str, float, float, float]]], dict[str, float], list[tuple[float, float]]
]:
    """Per worker its tests (name, start, wall, cpu), each file's `#END` (main: the run's
    start under "#START"), and the controller's `#IDLE` samples (time, idle core-s)."""
    workers: dict[str, list[tuple[str, float, float, float]]] = {}
    marks: dict[str, float] = {}
    idle: list[tuple[float, float]] = []
    for path in sorted(glob.glob(os.path.join(folder, "*.tsv"))):
        worker = os.path.basename(path)[: -len(".tsv")]
        with open(path) as fh:
            for line in fh:
                name, own, kids, wall, *rest = line.rstrip("\n").split("\t")
                at = float(rest[2]) if len(rest) > 2 else 0.0
                if name == "#START":
                    marks["#START"] = at
                elif name == "#IDLE":
                    idle.append((at, float(own)))
                elif name == "#END":
                    marks[worker] = at
                elif at:
                    cpu = float(own) + float(kids)
                    workers.setdefault(worker, []).append((name, at, float(wall), cpu))
    return workers, marks, idle


def timeline(folder: str, step: float = 10.0, cores: int = 2, last: int = 3) -> list[str]:
    """Per `step` seconds from the run's start: how many workers were in a test, the CPU
    their tests used (each test's CPU spread evenly over its wall time) and the cores
    the machine left idle (`#IDLE`, if recorded); then the idle core-seconds in all,
    each worker's end and its `last` tests."""
    workers, marks, idle = _read_timeline(folder)
    if not workers:
        return [f"{folder}: no test has a start time (recorded before they were)"]
    tests = [test for ts in workers.values() for test in ts]
    start = marks.get("#START") or min(at for _, at, _, _ in tests)
    end = marks.get("main") or max(at + wall for _, at, wall, _ in tests)
    n = max(1, int((end - start) / step) + 1)
    busy, demand, machine = [0.0] * n, [0.0] * n, [0.0] * n
    for _, at, wall, cpu in tests:
        t0, t1 = at - start, at - start + wall
        for i in range(max(0, int(t0 / step)), min(n, int(t1 / step) + 1)):
            overlap = min(t1, (i + 1) * step) - max(t0, i * step)
            if overlap > 0:
                busy[i] += overlap / step
                demand[i] += cpu * overlap / wall / step
    before = 0.0
    for at, total in idle:  # cumulative samples: each one's increase, in its step
        i = min(n - 1, max(0, int((at - start) / step)))
        machine[i] += (total - before) / step
        before = total
    lines = [f"{'from s':>7} {'workers in a test':>17} {'their cpu':>9} {'idle cores':>10}"]
    for i in range(n):
        shown = f"{machine[i]:10.2f}" if idle else f"{'-':>10}"
        lines.append(f"{i * step:7.0f} {busy[i]:17.2f} {demand[i]:9.2f} {shown}")
    spread = sum(max(0.0, cores - d) * step for d in demand)
    lines.append(
        f"run {end - start:.1f} s; {cores} cores idle {spread:.1f} core-s by the tests' CPU"
        + (f", {before:.1f} core-s by /proc/stat" if idle else "")
    )
    for worker, ts in sorted(workers.items()):
        done = marks.get(worker, ts[-1][1] + ts[-1][2]) - start
        in_tests = sum(wall for _, _, wall, _ in ts)
        lines.append(f"{worker}: ends at {done:.1f} s, {in_tests:.1f} s in its tests; last:")
        for name, at, wall, cpu in ts[-last:]:
            lines.append(f"  {at - start:7.1f} +{wall:5.2f} s (cpu {cpu:5.2f}) {name}")
    return lines


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[1:2] == ["timeline"]:
        step = float(args[2]) if len(args) > 2 else 10.0
        print("\n".join(timeline(args[0], step, *(int(a) for a in args[3:4]))))
    else:
        print("\n".join(summary(args[0], *(int(a) for a in args[1:3]))))
