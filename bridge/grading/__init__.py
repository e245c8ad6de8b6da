"""Outcome grading: approval / rejection / rephrase / neutral from the next user message."""

from bridge.grading.classify import LABELS, Label, Outcome, classify
from bridge.grading.evaluate import Case, Report, evaluate, format_report, load_cases

__all__ = [
    "LABELS",
    "Case",
    "Label",
    "Outcome",
    "Report",
    "classify",
    "evaluate",
    "format_report",
    "load_cases",
]
