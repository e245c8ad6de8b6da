"""Where `make test` spends CPU: an opt-in pytest plugin and its summary, per file or folder.

Record (each xdist worker writes one file; nothing is recorded without `-p`):

    CPU_PROFILE_DIR=/tmp/cpu make test PYTEST_ARGS="-p tests.cpu_profile"

Summarise (`depth` 2: per folder, 9: per file; the top `rows`):

    .venv/bin/python -m tests.cpu_profile /tmp/cpu [depth] [rows]

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
"""

from __future__ import annotations

import collections
import glob
import os
import resource
import sys
import time
from collections.abc import Iterator
from typing import TextIO

import pytest


def _starts() -> tuple[int, int]:
    from tests import forkserver

    return forkserver.spawned, forkserver.roost_starts


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


class _Recorder:
    def __init__(self, folder: str) -> None:
        os.makedirs(folder, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.out: TextIO = open(os.path.join(folder, f"{worker}.tsv"), "a", buffering=1)  # noqa: SIM115

    def row(
        self, name: str, own: float, kids: float, wall: float, starts: tuple[int, int] = (0, 0)
    ) -> None:
        self.out.write(f"{name}\t{own:.4f}\t{kids:.4f}\t{wall:.4f}\t{starts[0]}\t{starts[1]}\n")


_recorder: list[_Recorder] = []


def pytest_configure(config: pytest.Config) -> None:
    _recorder.append(_Recorder(os.environ.get("CPU_PROFILE_DIR", "/tmp/roost-cpu-profile")))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    own0, kids0 = _cpu()
    procs0, roost0 = _starts()
    wall0 = time.monotonic()
    yield
    own1, kids1 = _cpu()
    procs1, roost1 = _starts()
    wall = time.monotonic() - wall0
    _recorder[0].row(
        item.nodeid, own1 - own0, kids1 - kids0, wall, (procs1 - procs0, roost1 - roost0)
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    own, kids = _cpu()
    _recorder[0].row("#END", own, kids, 0.0)
    _recorder[0].out.close()


def summary(folder: str, depth: int = 2, rows: int = 40) -> list[str]:
    """The table: per key (the test file's path cut to `depth` parts), tests, seconds, and
    the processes started (all, and roost's)."""
    sums: dict[str, list[float]] = collections.defaultdict(lambda: [0.0] * 6)
    ends = [0.0, 0.0]
    for path in glob.glob(os.path.join(folder, "*.tsv")):
        with open(path) as fh:
            for line in fh:
                name, own, kids, wall, *starts = line.rstrip("\n").split("\t")
                if name == "#END":
                    if not path.endswith("main.tsv"):
                        ends[0] += float(own)
                        ends[1] += float(kids)
                    continue
                key = "/".join(name.split("::")[0].split("/")[:depth])
                values = (1.0, float(own), float(kids), float(wall), *map(float, starts))
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


if __name__ == "__main__":
    args = sys.argv[1:]
    print("\n".join(summary(args[0], *(int(a) for a in args[1:3]))))
