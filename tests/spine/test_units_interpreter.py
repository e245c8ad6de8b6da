"""`roost install-units` names a venv whose Python the service cannot reach.

The units checked only the prefix: a checkout in /opt/roost whose `.venv/bin/python`
links to a pyenv Python in /root got `ProtectHome=yes` and `User=roost`, passed
`systemd-analyze verify`, and could never start (status 203/EXEC, restarted every
5 s). Now the links are followed (and `pyvenv.cfg`'s `home`, which a `--copies` venv
reads its standard library from): one warning line says where the Python really is,
why the service cannot see it and how to make the venv again. Through the real CLI.
"""

from __future__ import annotations

from pathlib import Path

from tests.spine.test_cli_units import install_units


def venv(prefix: Path, python: str, home: str | None = None) -> Path:
    """`prefix` with a roost program and a venv whose `python` links to `python`."""
    bin_dir = prefix / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "roost").write_text("#!/bin/sh\n")
    (bin_dir / "python").symlink_to(python)
    if home is not None:
        (prefix / ".venv" / "pyvenv.cfg").write_text(f"home = {home}\nversion = 3.11.7\n")
    return prefix


def about_python(err: str) -> list[str]:
    """The lines about the venv's Python (a prefix under /tmp, as pytest's, is warned
    about too: tests/spine/test_cli_newcomer_units.py)."""
    return [line for line in err.splitlines() if "/.venv/bin/python is " in line]


def test_a_venv_python_under_root_is_named_with_the_fix(home: Path, tmp_path: Path) -> None:
    real = "/root/.pyenv/versions/3.11.7/bin/python3.11"
    prefix = venv(tmp_path / "opt-roost", real)
    code, out, err = install_units(home, "--prefix", str(prefix), "--credentials", str(tmp_path))
    assert code == 0 and "ProtectHome=yes" in out  # the units are still printed
    said = about_python(err)
    assert said == [
        f"roost install-units: warning: {prefix}/.venv/bin/python is {real} (links followed), "
        "under /root, which ProtectHome=yes hides from the service: it cannot start (status "
        "203/EXEC). Make the venv again with a Python outside home and temporary folders (in "
        f"{prefix}: `rm -rf .venv && make prod PYTHON=/usr/bin/python3`), then run install-units "
        "again"
    ]


def test_a_copied_python_whose_home_is_under_home_is_named(home: Path, tmp_path: Path) -> None:
    prefix = venv(tmp_path / "copies", "/usr/bin/python3", home="/home/ann/.asdf/bin")
    code, _, err = install_units(home, "--prefix", str(prefix), "--credentials", str(tmp_path))
    assert code == 0
    (line,) = about_python(err)
    assert "is /home/ann/.asdf/bin (links followed), under /home, which ProtectHome" in line


def test_a_system_python_says_nothing(home: Path, tmp_path: Path) -> None:
    prefix = venv(tmp_path / "system", "/usr/bin/python3", home="/usr/bin")
    code, _, err = install_units(home, "--prefix", str(prefix), "--credentials", str(tmp_path))
    assert code == 0
    assert about_python(err) == []
