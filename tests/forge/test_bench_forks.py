"""bench.sandbox --forks runs: a zygote started like a helper's forks, its children
exit when closed, the zygote's mappings and memory are printed once, and one line
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
