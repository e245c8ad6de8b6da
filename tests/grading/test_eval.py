"""The grader on the labelled sets (a real check on real data) and the eval report."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from bridge.cli.grade import run_grade_eval
from bridge.grading import LABELS, Case, Outcome, evaluate, load_cases

HERE = Path(__file__).parent
DEV = HERE / "outcomes.jsonl"
HOLDOUT = HERE / "outcomes_holdout.jsonl"


def test_labelled_sets_are_balanced_and_large_enough() -> None:
    dev, holdout = load_cases(DEV), load_cases(HOLDOUT)
    assert len(dev) >= 120
    assert len(holdout) >= 40
    for cases in (dev, holdout):
        counts = {label: sum(c.label == label for c in cases) for label in LABELS}
        assert min(counts.values()) >= len(cases) // 5


@pytest.mark.parametrize("path", [DEV, HOLDOUT])
def test_macro_f1_at_least_0_9(path: Path) -> None:
    report = evaluate(load_cases(path))
    assert report.macro_f1 >= 0.9, report.errors
    assert report.accuracy >= 0.9


def test_report_arithmetic_with_a_fixed_classifier() -> None:
    cases = [
        Case("p", "r", "a1", "approval"),
        Case("p", "r", "a2", "approval"),
        Case("p", "r", "j1", "rejection"),
        Case("p", "r", "n1", "neutral"),
    ]
    answers = {"a1": "approval", "a2": "neutral", "j1": "rejection", "n1": "neutral"}
    report = evaluate(cases, lambda p, r, n: Outcome(answers[n], 1.0, "fixed"))  # type: ignore[arg-type]
    assert report.accuracy == 0.75
    assert report.confusion["approval"] == {
        "approval": 1,
        "rejection": 0,
        "rephrase": 0,
        "neutral": 1,
    }
    assert report.per_label["approval"].precision == 1.0
    assert report.per_label["approval"].recall == 0.5
    assert report.per_label["neutral"].precision == 0.5
    assert report.per_label["rephrase"].support == 0
    # macro-F1 over labels present in the gold set: (2/3 + 1 + 2/3) / 3
    assert report.macro_f1 == pytest.approx((2 / 3 + 1 + 2 / 3) / 3)


def test_cli_prints_the_report(tmp_path: Path) -> None:
    out = io.StringIO()
    assert run_grade_eval(DEV, out=out) == 0
    text = out.getvalue()
    assert "macro-F1" in text
    assert "confusion" in text
    for label in LABELS:
        assert label in text


def test_cli_errors(tmp_path: Path) -> None:
    err = io.StringIO()
    assert run_grade_eval(tmp_path / "missing.jsonl", err=err) == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"previous": "a", "reply": "b", "next": "c", "label": "maybe"}\n')
    assert run_grade_eval(bad, err=err) == 2
    assert "label" in err.getvalue()
