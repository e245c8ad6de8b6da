"""`roost grade --eval FILE [--judge]`: the report's format, both stages, the offline refusal.

The judge is the scripted one on the fake OpenAI server (labels by follow-up
text): these tests check the plumbing and the output, not a model's quality.
"""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.cli.grade import run_grade_judged
from bridge.cli.main import main
from bridge.llm.offline import OfflineBackend
from bridge.llm.openai import OpenAIBackend
from tests.grading.judge_fake import ScriptedJudge, items_of

KEY = "sk-grade"
SHOW, FINDER = "How do I show hidden files?", "In Finder press Cmd+Shift+."
AGAIN = "what's the command for dotfiles"
CASES = [
    # lexical: approval
    ("How do I list hidden files?", "Use ls -a.", "perfect, thanks!", "approval"),
    # lexically neutral, a rephrase: the judge finds it
    (SHOW, FINDER, AGAIN, "rephrase"),
    # lexically neutral, a new request: the judge keeps it neutral
    ("How do I list hidden files?", "Use ls -a.", "can I sort them by size too?", "neutral"),
    # the same inputs again: asked once
    (SHOW, FINDER, AGAIN, "rephrase"),
    # a reaction, not a request: never asked
    ("Wie viele Beine hat eine Spinne?", "Sechs.", "hab ich gemacht, passiert nix", "rejection"),
]  # fmt: skip


@pytest.fixture
def cases_file(tmp_path: Path) -> Path:
    path = tmp_path / "cases.jsonl"
    lines = [
        json.dumps({"previous": p, "reply": r, "next": n, "label": g, "lang": "en"})
        for p, r, n, g in CASES
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
async def fake() -> AsyncIterator[ScriptedJudge]:
    async with ScriptedJudge(api_key=KEY, models=["m1"]) as server:
        server.labels[AGAIN] = "rephrase"
        yield server


def test_the_lexical_report_has_confusion_macro_f1_and_recall(cases_file: Path) -> None:
    out = io.StringIO()
    assert main_out(["grade", "--eval", str(cases_file)], out) == 0
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[0] == "stage: lexical"
    assert lines[1].startswith("cases: 5   accuracy: ") and "macro-F1: " in lines[1]
    assert lines[2].split() == ["label", "precision", "recall", "F1", "support"]
    assert "confusion (rows: gold, columns: predicted)" in text
    row = next(ln for ln in lines if ln.startswith("rephrase "))
    assert row.split()[2] == "0.000"  # recall: the lexical stage misses both rephrasings


async def test_with_the_judge_the_rephrasings_are_found_in_one_batched_request(
    cases_file: Path, fake: ScriptedJudge
) -> None:
    out = io.StringIO()
    backend = OpenAIBackend(fake.base_url, KEY, "m1", max_retries=0)
    try:
        assert await run_grade_judged(cases_file, backend, "default", 8, out=out) == 0
    finally:
        await backend.aclose()
    assert [items_of(b) for b in fake.requests] == [[AGAIN, "can I sort them by size too?"]]
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("stage: lexical + judge (model default: ")
    assert lines[1] == (
        "judge: 3 follow-ups eligible, 2 asked in 1 request, 0 answers ignored "
        "(not one label), 0 without an answer, 2 labels changed"
    )
    rephrase = next(ln for ln in lines if ln.startswith("rephrase ")).split()
    assert rephrase[2] == "1.000" and rephrase[4] == "2"  # recall, support
    confusion = lines[lines.index("confusion (rows: gold, columns: predicted)") :]
    gold_rephrase = next(ln for ln in confusion if ln.startswith("rephrase"))
    assert gold_rephrase.split()[1:] == ["0", "0", "2", "0"]


async def test_batches_follow_the_batch_size_and_bad_answers_are_counted(
    cases_file: Path, fake: ScriptedJudge
) -> None:
    fake.raw = "rephrase, I guess"
    out = io.StringIO()
    backend = OpenAIBackend(fake.base_url, KEY, "m1", max_retries=0)
    try:
        assert await run_grade_judged(cases_file, backend, "default", 1, out=out) == 0
    finally:
        await backend.aclose()
    assert len(fake.requests) == 2
    assert "2 asked in 2 requests, 2 answers ignored (not one label)" in out.getvalue()
    assert "0 labels changed" in out.getvalue()


async def test_with_no_model_the_judge_refuses_clearly(cases_file: Path) -> None:
    err = io.StringIO()
    code = await run_grade_judged(cases_file, OfflineBackend(), "default", 8, err=err)
    assert code == 78
    assert "--judge needs a model, and none is configured" in err.getvalue()


def test_the_command_line_refuses_judge_on_the_offline_backend(
    cases_file: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["grade", "--eval", str(cases_file), "--judge"]) == 78
    assert "none is configured (the offline backend)" in capsys.readouterr().err


def main_out(argv: list[str], out: io.StringIO) -> int:
    import contextlib

    with contextlib.redirect_stdout(out):
        return main(argv)
