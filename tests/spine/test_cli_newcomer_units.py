"""`roost install-units --prefix` under /tmp warns that PrivateTmp=yes hides it (s35 N15).

A newcomer's `roost install-units --prefix /tmp/new35` printed units whose ExecStart is
under /tmp beside `PrivateTmp=yes`: the service sees a private, empty /tmp, so it cannot
run, and nothing said so (a prefix under /home was already warned about). The units
are still printed (exit 0), with one warning line on stderr. Through the real CLI.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.cli.units import warnings
from tests.spine.test_cli_units import install_units


def installed(prefix: Path) -> Path:
    """`prefix` holding a roost program, as `make` leaves it."""
    program = prefix / ".venv" / "bin" / "roost"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    return prefix


def test_a_prefix_under_tmp_is_warned_about(home: Path, tmp_path: Path) -> None:
    if not tmp_path.is_relative_to("/tmp"):
        pytest.skip(f"the test folder {tmp_path} is not under /tmp")
    prefix = installed(tmp_path / "new35")
    code, out, err = install_units(home, "--prefix", str(prefix), "--credentials", str(tmp_path))
    assert code == 0
    assert f"ExecStart={prefix}/.venv/bin/roost serve" in out and "PrivateTmp=yes" in out
    assert err.splitlines() == [
        f"roost install-units: warning: {prefix} is under a temporary folder, which "
        "PrivateTmp=yes replaces with an empty one for the service: its ExecStart cannot "
        "run. Install roost elsewhere (e.g. /opt/roost: `make prod` there) and run "
        "install-units with that prefix"
    ]


def test_var_tmp_is_warned_about_too_and_a_name_like_tmp_is_not(tmp_path: Path) -> None:
    assert len(warnings(Path("/var/tmp/roost"), tmp_path)) == 1
    assert warnings(Path("/opt/roost"), tmp_path) == []
    assert warnings(Path("/srv/tmproost"), tmp_path) == []
