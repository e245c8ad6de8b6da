"""The held-back log lines are reported at exit, and a stream closed by then (a test
runner's capture, a closed pipe) makes no "Logging error" traceback instead."""

from __future__ import annotations

import subprocess

from tests.fresh import python_c

FLOOD = """
import io, logging, sys
from bridge.app.logging_setup import setup_logging
real = sys.stderr
sys.stderr = {stream}
setup_logging("INFO")
for i in range(200):
    logging.getLogger("roost.x").warning("the same line %d", i)
{after}
"""


def run(stream: str, after: str) -> subprocess.CompletedProcess[str]:
    code = FLOOD.format(stream=stream, after=after)
    return python_c(code, check=False)


def test_held_lines_are_counted_at_exit() -> None:
    done = run("real", "")
    assert done.returncode == 0
    assert "more like this in the last" in done.stderr, done.stderr
    assert "Logging error" not in done.stderr


def test_a_stream_closed_before_exit_is_left_alone() -> None:
    done = run("io.StringIO()", "sys.stderr.close(); sys.stderr = real")
    assert done.returncode == 0
    assert "Logging error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
