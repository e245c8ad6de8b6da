"""`roost style status` says whether the timer is there; a dry sweep names who it passed over.

A newcomer (s35 N20) read "next sweep: daily at 04:45 (roost-style.timer,
Persistent=true)" on a machine with no timer installed, and "dry run: 0 tenants" with
two tenants configured. The second was right, unexplained: a sweep looks only at
tenants with a skill turn graded in its window, or with bullets, and theirs had none.
Now status reads the unit file where `roost install-units` puts it and asks systemctl
when there is one (a fake one on PATH here; none at all must not fail), and the sweep
names the configured tenants it did not look at, and why.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from bridge.cli import style
from bridge.core.config import Settings, load_settings
from tests.style.test_chain_cli import run, seed_chain

NOT_INSTALLED = (
    "next sweep: daily at 04:45 only with roost-style.timer, which is not installed (no "
    "{unit}): `roost install-units` prints it; until then `roost style sweep` runs one"
)


@pytest.fixture
def units(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty /etc/systemd/system of our own, and a PATH with no systemctl."""
    folder = tmp_path / "systemd-system"
    folder.mkdir()
    monkeypatch.setattr(style, "SYSTEMD_DIR", folder, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    return folder


def systemctl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, says: str) -> None:
    """A `systemctl` on PATH whose `is-active` prints `says`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "systemctl"
    fake.write_text(f'#!/bin/sh\n[ "$1 $2" = "is-active roost-style.timer" ] && echo {says}\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def status_line(settings: Settings, capsys: pytest.CaptureFixture[str]) -> str:
    assert run(["style", "status"], settings) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("next sweep")]
    return line


def test_status_says_whether_the_timer_is_installed_and_active(
    settings: Settings,
    units: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    unit = units / "roost-style.timer"
    assert status_line(settings, capsys) == NOT_INSTALLED.format(unit=unit)  # no systemctl
    systemctl(tmp_path, monkeypatch, "")  # as in a container: nothing on stdout, no failure
    assert status_line(settings, capsys) == NOT_INSTALLED.format(unit=unit)
    unit.write_text("[Timer]\nOnCalendar=*-*-* 04:45:00\n")
    assert status_line(settings, capsys) == (
        f"next sweep: daily at 04:45 (roost-style.timer is installed in {units}, "
        "Persistent=true; whether it is enabled could not be asked of systemctl)"
    )
    systemctl(tmp_path, monkeypatch, "inactive")
    assert status_line(settings, capsys) == (
        f"next sweep: daily at 04:45 once roost-style.timer runs: it is installed ({unit}) "
        "but inactive: systemctl enable --now roost-style.timer"
    )
    systemctl(tmp_path, monkeypatch, "active")
    assert status_line(settings, capsys) == (
        "next sweep: daily at 04:45 (roost-style.timer is active, Persistent=true)"
    )


def test_a_dry_sweep_names_the_tenants_it_passed_over(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = load_settings(tenants={"alice": {}, "bob": {}})
    passed = (
        "no skill turn graded in the last 14 days and no style bullets (the learner starts "
        "once a reply uses a skill and the next message grades it)"
    )
    assert run(["style", "sweep", "--dry-run"], settings) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("dry run: 0 tenants: 0 candidates")
    assert f"  not swept: alice, bob, local: {passed}" in out

    asyncio.run(seed_chain(settings))  # six graded turns of alice's skill `deploy`
    assert run(["style", "sweep", "--dry-run"], settings) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("dry run: 1 tenant: 1 candidate")
    assert f"  not swept: bob, local: {passed}" in out
