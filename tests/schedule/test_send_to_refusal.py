"""`roost send --to` names what it refused: the target, an empty text or a long one (s46).

One line listing every form and the length limit together answered each of them, so a
newcomer's typo (`--to telgram:1`) or a 16,001-character text left them to guess which
part was wrong. Through the real CLI entry (`bridge.cli.main`), in a home of its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.cli.main import main
from bridge.cli.schedule import MAX_TEXT, send_to_refusal, target_of


@pytest.mark.parametrize(
    ("to", "text", "said"),
    [
        ("telgram:1", "hi", "--to 'telgram:1' is not a target: give web[:<chat>] or "),
        ("web:a b", "hi", "--to 'web:a b' is not a target"),
        ("web", "", "the message is empty"),
        ("web", "x" * (MAX_TEXT + 1), f"the message is {MAX_TEXT + 1:,} characters; at most "),
    ],
)
def test_each_fault_is_named(to: str, text: str, said: str) -> None:
    refusal = send_to_refusal(to, target_of(to), text)
    assert refusal is not None and refusal.startswith(said), refusal


def test_a_good_target_and_text_pass() -> None:
    assert send_to_refusal("web:w1", target_of("web:w1"), "x" * MAX_TEXT) is None


def test_the_cli_says_it(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["send", "--to", "telgram:1", "hello"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("roost send: --to 'telgram:1' is not a target: give web[:<chat>]"), err
