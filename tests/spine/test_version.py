"""`roost --version` prints `roost <version>` (pyproject.toml's, as installed) and exits 0.

A newcomer's `roost --version` was refused ("unrecognized arguments"); `roost
--help` now lists it too. Through the real command line.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from tests.waits import HANG_S

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def roost(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bridge.cli.main", *argv],
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )


def test_version_prints_the_projects_version() -> None:
    version = tomllib.loads(PYPROJECT.read_text())["project"]["version"]
    for flag in ("--version", "-V"):
        done = roost(flag)
        assert (done.returncode, done.stdout, done.stderr) == (0, f"roost {version}\n", "")


def test_help_mentions_version() -> None:
    done = roost("--help")
    assert done.returncode == 0
    (line,) = [line for line in done.stdout.splitlines() if "--version" in line and "-V" in line]
    assert "print roost's version and exit" in line
