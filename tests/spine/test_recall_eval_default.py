"""`roost recall-eval`'s default data set lies outside the checkout and is not shipped.

A fresh clone said only "/tmp/shared/eval/locomo-dev is not a directory" and
`--help` named no default. Now `--help` names the default and where it comes
from, and without it the error says the set is not shipped and to pass `--dir`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.cli import main as cli
from bridge.cli import recall
from bridge.recall.evaluate import DEV_DIR
from tests.spine.test_cli_failures import in_process


def test_help_names_the_default_set(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["recall-eval", "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"(default: the LoCoMo dev set in {DEV_DIR}" in text
    assert "not shipped with roost" in text


def test_without_the_set_the_error_says_to_pass_dir(
    home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    missing = tmp_path / "shared" / "eval" / "locomo-dev"
    monkeypatch.setattr(recall, "DEV_DIR", missing)  # a fresh clone: no shared/ beside it
    code, line = in_process(["recall-eval"], capsys, monkeypatch)
    assert code == 2
    assert line.startswith("roost recall-eval: the default data set (LoCoMo dev) is not shipped")
    assert str(missing) in line and "pass --dir DIR" in line
    code, line = in_process(["recall-eval", "--dir", str(tmp_path / "nope")], capsys, monkeypatch)
    assert (code, line) == (2, f"roost recall-eval: {tmp_path / 'nope'} is not a directory")
