"""The correction detector on its held-out corpus, and the cases the issue names.

`corpus.jsonl` (190 English and German lines: standing instructions and
everyday sentences with the same words) was written before the detector and
never tuned on; `tune.jsonl` is the separate set the rules were shaped on.
The figures measured on the corpus are in the module's report (docs/style.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bridge.corrections.detect import detect

HERE = Path(__file__).parent


def _rows(name: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in (HERE / name).read_text().splitlines() if line]


def scores(name: str) -> tuple[float, float, float]:
    tp = fp = fn = subject_ok = subject_n = 0
    for row in _rows(name):
        found = detect(str(row["text"]))
        if row["label"] and found is not None:
            tp += 1
            if row.get("subject"):
                subject_n += 1
                subject_ok += found.subject == row["subject"]
        elif row["label"]:
            fn += 1
        elif found is not None:
            fp += 1
    return tp / (tp + fp), tp / (tp + fn), subject_ok / subject_n


def test_held_out_corpus_precision_and_recall() -> None:
    precision, recall, subjects = scores("corpus.jsonl")
    # measured once, after the rules were shaped on tune.jsonl: P 0.980, R 1.000, subject 75/76
    assert precision >= 0.95 and recall >= 0.95 and subjects >= 0.95, (precision, recall)


def test_both_languages_and_both_classes_are_in_the_corpus() -> None:
    rows = _rows("corpus.jsonl")
    german = [r for r in rows if any(w in str(r["text"]).lower() for w in ("bitte", "ich", "nie"))]
    assert len(rows) >= 180 and len(german) >= 40
    assert sum(1 for r in rows if r["label"]) >= 80 and sum(1 for r in rows if not r["label"]) >= 80


@pytest.mark.parametrize(
    ("text", "polarity", "subject"),
    [
        ("From now on, always answer in German.", 1, "language"),
        ("Please don't ever use emojis.", -1, "emoji"),
        ("stop doing that thing where you summarise my question", -1, ""),
        ("Bitte immer metrische Einheiten.", 1, "units"),
        ("Nie wieder Ausrufezeichen!", -1, "punctuation"),
        ("Hör auf, dich zu entschuldigen.", -1, "apology"),
        ("In Zukunft bitte kürzer.", 1, "length"),
        ("Thanks! From now on, use imperial units.", 1, "units"),
    ],
)
def test_instructions(text: str, polarity: int, subject: str) -> None:
    found = detect(text)
    assert found is not None
    assert (found.polarity, found.subject) == (polarity, subject)


@pytest.mark.parametrize(
    "text",
    [
        "I always forget my password.",
        "never mind",
        "Nie im Leben!",
        'She told me "never use emojis".',
        "Do you always answer in German?",
        "Ich vergesse immer alles.",
        "From now until Friday I'm away.",
        "/remember always use metric",
    ],
)
def test_not_instructions(text: str) -> None:
    assert detect(text) is None
