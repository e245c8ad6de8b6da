"""bench/idle.py reads CPU time right: a busy grandchild's seconds count for its ancestor.

The figure the bench prints is only as good as its /proc reading: utime and
stime of the process and of every living descendant (a daemon's sandbox
helpers and decoders). A grandchild burns a known amount of CPU (by its own
`os.times()`, not the clock) and then waits; the reading of its grandparent
must include it, and a reaped child's time must still count (cutime).
"""

from __future__ import annotations

import subprocess
import sys

from bench.idle import cpu_seconds
from tests.waits import HANG_S

BURN = (
    "import os, sys\n"
    "while os.times().user < 0.2: pass\n"
    "print('done', flush=True)\n"
    "sys.stdin.read()\n"
)


def _check(outer: str, lines: list[str]) -> None:
    """Run `outer`, read `lines` from it, then the CPU reading must hold the 0.2 s burnt."""
    with subprocess.Popen(
        [sys.executable, "-c", outer], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        try:
            for line in lines:
                assert proc.stdout.readline() == line
            assert cpu_seconds(proc.pid) >= 0.2
            proc.stdin.close()  # everything still waiting on stdin ends now
            proc.wait(HANG_S)
        finally:
            proc.kill()


def test_a_busy_grandchild_counts_for_its_grandparent() -> None:
    outer = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {BURN!r}])\n"
    _check(outer, ["done\n"])  # the grandchild has burnt its 0.2 s and is still alive


def test_a_reaped_child_still_counts() -> None:
    outer = (
        "import subprocess, sys\n"
        f"subprocess.run([sys.executable, '-c', {BURN!r}], stdin=subprocess.DEVNULL)\n"
        "print('reaped', flush=True)\n"
        "sys.stdin.read()\n"
    )
    _check(outer, ["done\n", "reaped\n"])  # the busy child is gone, waited for
