"""bench.sandbox --forks runs: a zygote started like a helper's forks, its children
exit when closed, the zygote's mappings and memory are printed once, and one line
per batch gives the zygote's and the children's faults and CPU per fork (both
counted: a child faults at least once), taking turns with a zygote whose children
fault its code in again (they fault more); then the kernel's floor, whose children
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
        r"(code faulted in: )?zygote faults +([\d.]+) cpu ([\d.]+) ms; children faults "
        r"+([\d.]+) cpu",
        out,
    )
    assert [bool(row[0]) for row in rows] == [False, True, False, True]  # taking turns
    for _, zygote_faults, _, children_faults in rows:
        assert float(zygote_faults) > 0
        assert float(children_faults) > 0
    for mapped, faulted in zip(rows[::2], rows[1::2], strict=True):
        assert float(mapped[3]) < float(faulted[3])  # the code was mapped at the fork
    floor = re.search(r"writes (\d+) pages: child [\d.]+ ms, (\d+) faults", out)
    assert floor is not None, out
    assert int(floor[2]) > int(floor[1])  # each page written is a fault, and more
