"""`roost install-units`: a prefix without roost is refused, one under /home gets
ProtectHome=read-only (said on stderr), a secret file others may read is named,
and roost-style.service loads the audit key too (its sweep appends to the chain)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bridge.cli.units import render, warnings
from tests.waits import HANG_S

ROOST = [sys.executable, "-m", "bridge.cli.main"]
PREFIX = Path(sys.executable).parents[2]  # the checkout whose .venv runs these tests


def install_units(home: Path, *args: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CREDENTIALS_DIRECTORY"}
    env["ROOST_HOME"] = str(home)
    proc = subprocess.run(
        [*ROOST, "install-units", *args], env=env, capture_output=True, text=True, timeout=HANG_S
    )
    # a checkout under /tmp (a CI clone) is itself warned about: PrivateTmp=yes would hide
    # it from the service (tests/spine/test_cli_newcomer_units.py), and so is a venv made
    # with a Python under /root or /home (tests/spine/test_units_interpreter.py); not what
    # these test
    ours = (f"warning: {PREFIX} is under a temporary folder", f"{PREFIX / '.venv/bin/python'} is ")
    err = "".join(line for line in proc.stderr.splitlines(True) if not any(o in line for o in ours))
    return proc.returncode, proc.stdout, err


def test_a_prefix_without_roost_is_refused(home: Path, tmp_path: Path) -> None:
    code, out, err = install_units(home, "--prefix", str(tmp_path / "nonexistent"))
    assert code == 2 and out == ""
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert f"there is no {tmp_path / 'nonexistent' / '.venv/bin/roost'}" in err
    assert "install roost there first (`make prod` in the checkout)" in err  # a service's


def test_a_readable_secret_is_named_and_the_sweep_gets_the_audit_key(
    home: Path, tmp_path: Path
) -> None:
    creds = tmp_path / "credentials"
    creds.mkdir()
    key = creds / "audit-hmac-key"
    key.write_text("k" * 32)
    key.chmod(0o644)
    token = creds / "telegram-token"
    token.write_text("123456:AAH-fake")
    token.chmod(0o600)
    code, out, err = install_units(home, "--prefix", str(PREFIX), "--credentials", str(creds))
    assert code == 0, err
    assert err.strip().splitlines() == [
        f"roost install-units: warning: {key} is mode 0644, readable by others; it holds a "
        f"secret: chmod 600 {key}"
    ]
    style = out.split("# file: /etc/systemd/system/roost-style.service\n")[1]
    style = style.split("# file: ")[0].splitlines()
    assert f"LoadCredential=audit-hmac-key:{key}" in style
    assert not any("telegram-token" in line for line in style)  # the sweep needs the key only


def test_a_prefix_under_home_reads_it_read_only(tmp_path: Path) -> None:
    prefix = Path("/home/bob/roost")
    for name in ("roost.service", "roost-style.service"):
        lines = render(name, str(prefix), tmp_path).splitlines()
        assert f"ExecStart={prefix}/.venv/bin/roost" in " ".join(lines)
        assert "ProtectHome=read-only" in lines and "ProtectHome=yes" not in lines
    said = warnings(prefix, tmp_path)
    assert len(said) == 1 and "ProtectHome=read-only" in said[0]
    assert "ProtectHome=yes" in render("roost.service", "/opt/elsewhere", tmp_path).splitlines()
    assert warnings(Path("/opt/elsewhere"), tmp_path) == []
