"""bench.sandbox --stages prints what a child costs after its answer (its exit): the
children's CPU and faults per call, as the zygote's reaped totals, less a child's
mean at "serialised"."""

from __future__ import annotations

import os

import pytest

from bench.sandbox import print_after_answer


def test_after_answer_is_the_totals_less_the_stage(capsys: pytest.CaptureFixture[str]) -> None:
    tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
    calls = 4
    before = {"zygote": {"ccpu": 10, "cminflt": 1000}}
    # 4 calls: 3 ticks of CPU and 2,000 faults in all
    after = {"zygote": {"ccpu": 13, "cminflt": 3000}}
    cpu = [{"ready": 100, "serialised": 200}] * calls
    faults = [{"ready": 300, "serialised": 480}] * calls
    print_after_answer(before, after, cpu, faults)
    line = capsys.readouterr().out
    assert f"about {3 * tick_us / calls - 200:.0f} µs of CPU, 20 minor faults a call" in line


def test_nothing_is_printed_without_stages(capsys: pytest.CaptureFixture[str]) -> None:
    usage = {"zygote": {"ccpu": 0, "cminflt": 0}}
    print_after_answer(usage, usage, [], [])
    assert capsys.readouterr().out == ""
