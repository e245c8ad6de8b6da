"""Every line of the phrasing corpus (written before the parser) reads as expected."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bridge.schedule.when import When, WhenError, parse_when

CORPUS = [
    json.loads(line)
    for line in (Path(__file__).parent / "corpus_when.jsonl").read_text("utf-8").splitlines()
    if line.strip()
]


def test_corpus_is_large_and_bilingual() -> None:
    assert len(CORPUS) >= 150
    langs = {row["lang"] for row in CORPUS}
    assert langs == {"en", "de"}
    assert sum("expected_error" in row for row in CORPUS) >= 30


@pytest.mark.parametrize("row", CORPUS, ids=[f"{r['lang']}:{r['text'][:40]}" for r in CORPUS])
def test_corpus_line(row: dict[str, str]) -> None:
    now = datetime.fromisoformat(row["now"])
    got = parse_when(row["text"], now, ZoneInfo(row["tz"]))
    if "expected_error" in row:
        assert isinstance(got, WhenError), got
        assert got.code == row["expected_error"], got.message
        assert got.example and got.example in got.message
    else:
        assert isinstance(got, When), got.message
        assert got.at.isoformat() == row["expected"]
        assert str(got.at.tzinfo) == row["tz"]
        assert got.rest == row["rest"]
