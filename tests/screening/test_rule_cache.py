"""The shipped secret rules' parsed document is kept across processes (`rule_data.parsed`):
the next process reads it instead of parsing the TOML again, only for the identical text,
and a damaged or foreign file is parsed over."""

from __future__ import annotations

import sys
import tomllib
from importlib import resources
from pathlib import Path

import pytest

from bridge.screening import rule_data

TEXT = (
    '[labels]\nk = "a key"\n\n[[rule]]\nkind = "k"\nkeywords = ["ab"]\n'
    'pattern = "ab[0-9]{4}"\nfrom = ["x"]\n'
)


@pytest.fixture
def writing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # the suite may run with it set


def no_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(text: str) -> object:
        raise AssertionError("parsed again")

    monkeypatch.setattr(rule_data.tomllib, "loads", refuse)


def test_a_kept_document_is_read_back_without_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writing: None
) -> None:
    first = rule_data.parsed(TEXT, tmp_path)
    assert first == tomllib.loads(TEXT)
    assert list(tmp_path.glob("secret-rules.*.marshal"))
    no_parse(monkeypatch)
    assert rule_data.parsed(TEXT, tmp_path) == first


def test_another_text_is_parsed_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writing: None
) -> None:
    rule_data.parsed(TEXT, tmp_path)
    other = TEXT.replace("ab[0-9]{4}", "cd[0-9]{6}")
    assert rule_data.parsed(other, tmp_path)["rule"][0]["pattern"] == "cd[0-9]{6}"
    assert rule_data.parsed(TEXT, tmp_path)["rule"][0]["pattern"] == "ab[0-9]{4}"


def test_a_damaged_file_is_parsed_over(tmp_path: Path, writing: None) -> None:
    rule_data.parsed(TEXT, tmp_path)
    [kept] = tmp_path.glob("secret-rules.*.marshal")
    kept.write_bytes(kept.read_bytes()[:-20])
    assert rule_data.parsed(TEXT, tmp_path) == tomllib.loads(TEXT)


def test_nothing_is_written_when_byte_code_writing_is_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert rule_data.parsed(TEXT, tmp_path) == tomllib.loads(TEXT)
    assert not list(tmp_path.iterdir())


def test_a_kept_document_is_still_checked_for_labels(tmp_path: Path, writing: None) -> None:
    unlabelled = TEXT.replace('k = "a key"', 'j = "another"')
    with pytest.raises(ValueError, match="without a label"):
        rule_data.from_data(rule_data.parsed(unlabelled, tmp_path))
    with pytest.raises(ValueError, match="without a label"):
        rule_data.from_data(rule_data.parsed(unlabelled, tmp_path))


def test_the_shipped_rules_are_those_of_the_file() -> None:
    text = resources.files("bridge.screening").joinpath("secret_rules.toml").read_text("utf-8")
    rules, named, labels = rule_data.load(text)
    kept_rules, kept_named, kept_labels = rule_data.rule_set()
    assert [(r.kind, r.pattern.pattern, r.keywords) for r in kept_rules] == [
        (r.kind, r.pattern.pattern, r.keywords) for r in rules
    ]
    assert [(r.kind, r.value.pattern) for r in kept_named] == [
        (r.kind, r.value.pattern) for r in named
    ]
    assert kept_labels == labels
