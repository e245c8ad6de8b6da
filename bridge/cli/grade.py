"""`roost grade --eval FILE.jsonl [--judge]`: print the grader's scores on a labelled set.

Without `--judge` the lexical stage alone is scored; with it, follow-ups the
lexical stage leaves neutral and that are requests go to the judge model
(`[grading] judge_model`, else the default model) in batches of
`[grading] judge_batch`. The report: accuracy, macro-F1, per-label
precision / recall / F1, the confusion matrix and the misclassified cases.
With no model configured (the offline backend) `--judge` refuses (exit 78).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TextIO

from bridge.core.config import EX_CONFIG, Settings
from bridge.grading.evaluate import Case, evaluate, format_report, load_cases
from bridge.grading.judge_client import JudgeClient
from bridge.grading.two_stage import judge_outcomes, report_of
from bridge.types.backend import Backend, offline

NO_MODEL = (
    "grade: --judge needs a model, and none is configured (the offline backend). "
    "Set [llm] (ROOST_LLM__BASE_URL / ROOST_LLM__MODEL) or name one with "
    "[grading] judge_model; without --judge the lexical stage is scored."
)


def grade_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--eval",
        dest="eval_file",
        type=Path,
        required=True,
        help='JSONL lines of {"previous", "reply", "next", "label"}',
    )
    p.add_argument(
        "--judge",
        action="store_true",
        help="ask the judge model ([grading] judge_model) where the lexical stage is silent",
    )


def _cases(path: Path, err: TextIO) -> list[Case] | None:
    try:
        return load_cases(path)
    except OSError as exc:
        print(f"grade: cannot read {path}: {exc.strerror}", file=err)
    except (ValueError, KeyError, json.JSONDecodeError) as exc:
        print(f"grade: bad case file {path}: {exc}", file=err)
    return None


def run_grade_eval(path: Path, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Exit 0 after printing the report, 2 when the file cannot be read or parsed."""
    out, err = out or sys.stdout, err or sys.stderr
    cases = _cases(path, err)
    if cases is None:
        return 2
    print("stage: lexical", file=out)
    print(format_report(evaluate(cases)), file=out)
    return 0


async def run_grade_judged(
    path: Path,
    backend: Backend,
    model: str,
    batch: int,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Both stages; exit 78 when `backend` is the offline one, 2 on a bad file."""
    out, err = out or sys.stdout, err or sys.stderr
    if offline(backend):
        print(NO_MODEL, file=err)
        return EX_CONFIG
    cases = _cases(path, err)
    if cases is None:
        return 2
    outcomes, tally = await judge_outcomes(cases, JudgeClient(backend), batch)
    print(f"stage: lexical + judge (model {model}: {backend.describe()})", file=out)
    print(tally.line(), file=out)
    print(format_report(report_of(cases, outcomes)), file=out)
    return 0


def run_grade(args: argparse.Namespace, settings: Settings) -> int:
    if not args.judge:
        return run_grade_eval(args.eval_file)
    from bridge.app.models import make_backend

    model = settings.grading.judge_model or settings.llm.name
    backend, _reason = make_backend(settings, model)

    async def judged() -> int:
        try:
            return await run_grade_judged(
                args.eval_file, backend, model, settings.grading.judge_batch
            )
        finally:
            await backend.aclose()

    return asyncio.run(judged())
