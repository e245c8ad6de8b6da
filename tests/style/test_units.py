"""systemd/roost-style.service and .timer are valid and hardened (offline, no systemd)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waits import HANG_S

UNITS = Path(__file__).resolve().parents[2] / "systemd"
ANALYZE = shutil.which("systemd-analyze")
pytestmark = pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")


def _units_here(tmp_path: Path) -> tuple[Path, Path]:
    roost = Path(sys.executable).parent / "roost"
    service = tmp_path / "roost-style.service"
    text = (UNITS / "roost-style.service").read_text()
    service.write_text(text.replace("/opt/roost/.venv/bin/roost", str(roost)))
    timer = tmp_path / "roost-style.timer"
    timer.write_text((UNITS / "roost-style.timer").read_text())
    return service, timer


def _analyze(*args: str) -> subprocess.CompletedProcess[str]:
    assert ANALYZE is not None
    return subprocess.run([ANALYZE, *args], capture_output=True, text=True, timeout=HANG_S)


def test_units_verify(tmp_path: Path) -> None:
    service, timer = _units_here(tmp_path)
    proc = _analyze("--recursive-errors=yes", "verify", str(service), str(timer))
    assert proc.returncode == 0, proc.stderr


def test_service_is_a_hardened_oneshot_sweep(tmp_path: Path) -> None:
    service, _ = _units_here(tmp_path)
    proc = _analyze("security", "--offline=yes", "--threshold=20", str(service))
    assert proc.returncode == 0, proc.stdout[-500:]
    text = (UNITS / "roost-style.service").read_text()
    assert "Type=oneshot" in text
    assert "ExecStart=/opt/roost/.venv/bin/roost style sweep" in text
    base = (UNITS / "roost.service").read_text()
    hardening = [
        line
        for line in base.splitlines()
        if line.startswith(("Protect", "Restrict", "NoNewPrivileges", "PrivateTmp", "UMask"))
    ]
    assert hardening and all(line in text.splitlines() for line in hardening)


def test_timer_daily_at_0445_persistent() -> None:
    text = (UNITS / "roost-style.timer").read_text().splitlines()
    assert "OnCalendar=*-*-* 04:45:00" in text and "Persistent=true" in text
    assert "Unit=roost-style.service" in text
