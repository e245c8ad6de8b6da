"""`roost grade --eval FILE.jsonl`: print the grader's scores on a labelled set."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

from bridge.core.config import Settings
from bridge.grading.evaluate import evaluate, format_report, load_cases


def grade_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--eval",
        dest="eval_file",
        type=Path,
        required=True,
        help='JSONL lines of {"previous", "reply", "next", "label"}',
    )


def run_grade_eval(path: Path, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Exit 0 after printing the report, 2 when the file cannot be read or parsed."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        cases = load_cases(path)
    except OSError as exc:
        print(f"grade: cannot read {path}: {exc.strerror}", file=err)
        return 2
    except (ValueError, KeyError, json.JSONDecodeError) as exc:
        print(f"grade: bad case file {path}: {exc}", file=err)
        return 2
    print(format_report(evaluate(cases)), file=out)
    return 0


def run_grade(args: argparse.Namespace, settings: Settings) -> int:
    return run_grade_eval(args.eval_file)
