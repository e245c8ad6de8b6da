"""`make prod`, the install for a service, adds none of the test and lint tools.

README's service install ran `make`, which installs `.[dev]` (pytest, playwright, mypy,
ruff, hypothesis: minutes more, and a larger attack surface on a server). `make prod`
installs roost and its runtime dependencies only, then precompiles as `make` does.
Checked with `make -n` (what it would run, nothing run).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.waits import HANG_S

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_prod_installs_no_dev_extras_and_precompiles() -> None:
    said = subprocess.run(
        ["make", "-n", "prod"], cwd=REPO, capture_output=True, text=True, timeout=HANG_S
    )
    assert said.returncode == 0, said.stderr
    pip = [line for line in said.stdout.splitlines() if " -m pip install " in line]
    assert len(pip) == 1 and pip[0].endswith(" -e ."), said.stdout
    assert "[dev]" not in said.stdout
    assert ".venv/bin/python -m bridge.cli.precompile" in said.stdout
