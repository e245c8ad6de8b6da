"""Score the outcome grader on labelled cases: accuracy, per-label P/R/F1, confusion.

Cases are JSON lines `{"previous", "reply", "next", "label"}`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from bridge.grading.classify import LABELS, Label, Outcome, classify


@dataclass(frozen=True)
class Case:
    previous: str
    reply: str
    next: str
    label: Label


@dataclass(frozen=True)
class LabelScore:
    precision: float
    recall: float
    f1: float
    support: int


@dataclass(frozen=True)
class Report:
    total: int
    accuracy: float
    per_label: dict[Label, LabelScore]
    macro_f1: float
    confusion: dict[Label, dict[Label, int]]  # confusion[gold][predicted]
    errors: list[tuple[Case, Outcome]]


def load_cases(path: Path) -> list[Case]:
    cases = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        raw = json.loads(line)
        if raw.get("label") not in LABELS:
            raise ValueError(f"{path}:{n}: label must be one of {', '.join(LABELS)}")
        cases.append(Case(str(raw["previous"]), str(raw["reply"]), str(raw["next"]), raw["label"]))
    return cases


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


def evaluate(
    cases: Iterable[Case], classifier: Callable[[str, str, str], Outcome] = classify
) -> Report:
    confusion = {g: dict.fromkeys(LABELS, 0) for g in LABELS}
    errors: list[tuple[Case, Outcome]] = []
    total = 0
    for case in cases:
        outcome = classifier(case.previous, case.reply, case.next)
        confusion[case.label][outcome.label] += 1
        total += 1
        if outcome.label != case.label:
            errors.append((case, outcome))
    per_label: dict[Label, LabelScore] = {}
    for label in LABELS:
        tp = confusion[label][label]
        predicted = sum(confusion[g][label] for g in LABELS)
        support = sum(confusion[label].values())
        p, r = _ratio(tp, predicted), _ratio(tp, support)
        per_label[label] = LabelScore(p, r, _ratio(2 * p * r, p + r) if p + r else 0.0, support)
    present = [s.f1 for s in per_label.values() if s.support]
    correct = sum(confusion[g][g] for g in LABELS)
    macro = sum(present) / len(present) if present else 0.0
    return Report(total, _ratio(correct, total), per_label, macro, confusion, errors)


def format_report(report: Report, show_errors: bool = True) -> str:
    lines = [
        f"cases: {report.total}   accuracy: {report.accuracy:.3f}   macro-F1: {report.macro_f1:.3f}"
    ]
    lines.append(f"{'label':<10} {'precision':>9} {'recall':>7} {'F1':>6} {'support':>8}")
    for label, s in report.per_label.items():
        lines.append(f"{label:<10} {s.precision:9.3f} {s.recall:7.3f} {s.f1:6.3f} {s.support:8d}")
    lines.append("confusion (rows: gold, columns: predicted)")
    lines.append(" " * 10 + "".join(f"{p[:8]:>10}" for p in LABELS))
    for gold in LABELS:
        lines.append(f"{gold:<10}" + "".join(f"{report.confusion[gold][p]:>10}" for p in LABELS))
    if show_errors and report.errors:
        lines.append("misclassified:")
        for case, outcome in report.errors:
            lines.append(
                f"  gold {case.label:<9} got {outcome.label:<9} {case.next!r} ({outcome.reason})"
            )
    return "\n".join(lines)
