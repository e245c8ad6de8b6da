"""`Metrics.count` / `observe` (each series made once, labels sorted only when there
are two or more) against the registry as it was written first: seeded random calls
of every family with labels in any order must render the very same text."""

from __future__ import annotations

import random

from bridge.app.metrics import FAMILIES, Labels, Metrics, _Histogram, _histogram_lines, _labels


class OracleMetrics:
    """The registry before the fast path: a new key sorted and a histogram made per call."""

    def __init__(self) -> None:
        self._families = {f.name: f for f in FAMILIES}
        self._counters: dict[str, dict[Labels, float]] = {}
        self._histograms: dict[str, dict[Labels, _Histogram]] = {}

    def count(self, name: str, amount: float = 1, **labels: str) -> None:
        series = self._counters.setdefault(name, {})
        key = tuple(sorted(labels.items()))
        series[key] = series.get(key, 0) + amount

    def observe(self, name: str, value: float, **labels: str) -> None:
        family = self._families[name]
        series = self._histograms.setdefault(name, {})
        key = tuple(sorted(labels.items()))
        series.setdefault(key, _Histogram(family.bounds)).observe(value)

    def render(self) -> str:
        lines: list[str] = []
        for family in self._families.values():
            lines += [f"# HELP {family.name} {family.help}", f"# TYPE {family.name} {family.kind}"]
            if family.kind == "counter":
                for key, value in sorted(self._counters.get(family.name, {}).items()):
                    number = str(int(value)) if float(value).is_integer() else repr(float(value))
                    lines.append(f"{family.name}{_labels(key)} {number}")
            else:
                for key, hist in sorted(self._histograms.get(family.name, {}).items()):
                    lines += _histogram_lines(family.name, key, hist)
        return "\n".join(lines) + "\n"


def test_random_calls_render_as_the_first_registry() -> None:
    rng = random.Random(21)
    fast, oracle = Metrics(), OracleMetrics()
    assert fast.render() == oracle.render()
    values = ("answer", "failed", "ok", "timeout", 'quo"te', "new\nline")
    for _ in range(3000):
        family = rng.choice(FAMILIES)
        names = rng.sample(("kind", "outcome", "backend", "channel"), rng.randint(0, 3))
        labels = {n: rng.choice(values) for n in names}
        if family.kind == "counter":
            amount = rng.choice((1, 1, 2, 0.5))
            fast.count(family.name, amount, **labels)
            oracle.count(family.name, amount, **labels)
        else:
            value = rng.choice((0.0, 0.01, 0.1, 0.3, 7.0, 500.0, 3, 16, 40))
            fast.observe(family.name, value, **labels)
            oracle.observe(family.name, value, **labels)
    assert fast.render() == oracle.render()
