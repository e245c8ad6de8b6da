"""bench.sandbox --forks runs: a zygote started like a helper's forks, its children
exit when closed, the zygote's mappings and memory are printed once (its anonymous
memory also by kind, the parts adding up to the whole), and one line
per batch gives the zygote's and the children's faults and CPU per fork (both
counted: a child faults at least once); then the kernel's floor, whose children
that write pages fault more than those that write none."""

from __future__ import annotations

import re

import pytest

from bench.sandbox import forks


def test_forks_prints_a_row_per_batch(capsys: pytest.CaptureFixture[str]) -> None:
    forks(5, 2)
    out = capsys.readouterr().out
    layout = re.search(
        r"zygote: (\d+) mappings \((\d+) shared objects\), anonymous ([\d.]+) MiB", out
    )
    assert layout is not None, out
    assert int(layout[1]) > int(layout[2]) > 0 and float(layout[3]) > 0
    parts = re.search(r"its anonymous memory \(KiB\): (.*)", out)
    assert parts is not None, out
    kinds = {k: int(v) for k, v in re.findall(r"([a-z.+ ]+?) (\d+)(?:, |$)", parts[1])}
    assert set(kinds) == {
        "arenas+mmapped",
        "malloc heap",
        "libpython data",
        "other .so data",
        "stack",
    }
    assert kinds["arenas+mmapped"] > 0 and kinds["malloc heap"] > 0
    # the parts are the whole (the zygote waits, idle, between the two readings)
    assert abs(sum(kinds.values()) / 1024 - float(layout[3])) <= 0.1 * float(layout[3])
    rows = re.findall(
        r"zygote faults +([\d.]+) cpu ([\d.]+) ms; children faults +([\d.]+) cpu", out
    )
    assert len(rows) == 2
    for zygote_faults, _, children_faults in rows:
        assert float(zygote_faults) > 0
        assert float(children_faults) > 0
    floor = re.search(r"writes (\d+) pages: child [\d.]+ ms, (\d+) faults", out)
    assert floor is not None, out
    assert int(floor[2]) > int(floor[1])  # each page written is a fault, and more
