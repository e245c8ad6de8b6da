"""bench.sandbox_steps runs: one row per tool, each child's tool stage counted (a
fresh child faults at least once on it), and a tool run a second time in the same
child faults less than its first run did."""

from __future__ import annotations

from bench.sandbox_steps import STEPS, measure


def test_steps_measure_each_tool_in_fresh_children() -> None:
    rows = measure(3, {k: STEPS[k] for k in ("trivial", "CSV tool", "CSV tool, again")})
    assert [name for name, _, _ in rows] == ["trivial", "CSV tool", "CSV tool, again"]
    faults = {name: f for name, f, _ in rows}
    assert faults["trivial"] > 0 and faults["CSV tool"] > faults["trivial"]
    assert faults["CSV tool, again"] < faults["CSV tool"]
