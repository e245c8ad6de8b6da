"""The systemd unit is valid and hardened (checked offline, no systemd running)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waits import HANG_S

UNIT = Path(__file__).resolve().parents[2] / "systemd" / "roost.service"
ANALYZE = shutil.which("systemd-analyze")
pytestmark = pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")


def _unit_here(tmp_path: Path) -> Path:
    roost = Path(sys.executable).parent / "roost"
    text = UNIT.read_text().replace("/opt/roost/.venv/bin/roost", str(roost))
    unit = tmp_path / "roost.service"
    unit.write_text(text)
    return unit


def test_unit_verifies(tmp_path: Path) -> None:
    unit = _unit_here(tmp_path)
    proc = subprocess.run(
        [ANALYZE, "--recursive-errors=yes", "verify", str(unit)],
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert proc.returncode == 0, proc.stderr


def test_unit_exposure_is_low(tmp_path: Path) -> None:
    unit = _unit_here(tmp_path)
    proc = subprocess.run(
        [ANALYZE, "security", "--offline=yes", "--threshold=20", str(unit)],
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert proc.returncode == 0, proc.stdout[-500:]
    assert "RestartPreventExitStatus=78" in UNIT.read_text()
