"""`roost doctor --timeout` takes seconds above 0: -1 or 0 is refused by the argument
parser (exit 2, naming the option), not taken and then blamed on the model server (s33 N5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.spine.test_config import run_roost


@pytest.mark.parametrize("value", ["-1", "0", "nan"])
def test_a_timeout_not_above_zero_is_refused(home: Path, value: str) -> None:
    proc = run_roost(home, "doctor", "--timeout", value, ROOST_LLM__PROVIDER="offline")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""  # no check ran
    assert proc.stderr.strip().splitlines()[-1] == (
        f"roost doctor: error: argument --timeout: {value} is not above 0: "
        "give the seconds each network check may wait, e.g. 5"
    )


def test_a_word_is_refused_naming_it(home: Path) -> None:
    proc = run_roost(home, "doctor", "--timeout", "abc")
    assert proc.returncode == 2
    assert "'abc' is not a number of seconds" in proc.stderr
