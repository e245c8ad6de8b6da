"""bench.sandbox --forks also prints a child's exit alone: children forked from a
process holding a helper's heap, plain and with seccomp, Landlock or both, one row
each, with the child's CPU in all and the part after its last instruction (its
exit, from wait4 less what the child measured itself just before os._exit)."""

from __future__ import annotations

import re

import pytest

from bench.sandbox import exits


def test_exits_prints_a_row_per_layer_set(capsys: pytest.CaptureFixture[str]) -> None:
    exits(5)
    out = capsys.readouterr().out
    assert re.search(r"the forking process: anonymous [\d.]+ MiB", out), out
    rows = dict(
        (name, (int(total), int(exit_)))
        for name, total, exit_ in re.findall(
            r"^  (\S+) +child +(\d+) µs CPU, of which its exit +(-?\d+) µs", out, re.M
        )
    )
    assert set(rows) == {"plain", "seccomp", "landlock", "seccomp+landlock"}, out
    for total, exit_ in rows.values():
        assert 0 < exit_ < total  # an exit unmaps what the fork copied: never free
