"""`roost install-units [--prefix DIR]`: print the systemd units for an installation.

The units of `systemd/` are printed with `/opt/roost` replaced by the prefix
(ExecStart, Documentation), each under a `# file: /etc/systemd/system/NAME`
header, ready to be split into files. roost.service gets one
`LoadCredential=` line for each secret file present in the credentials
directory (`--credentials`, default /etc/roost/credentials); an absent one
stays a comment, because systemd refuses to start a unit whose credential
file is missing. roost-style.service (its sweep appends to the audit chain)
gets the `audit-hmac-key` one when that file is present.

A `--prefix` given without `.venv/bin/roost` under it is refused (exit 2): the
units would name a program that is not there. A prefix under /home, /root or
/run/user gets `ProtectHome=read-only` instead of `yes` (with `yes` the service
could not reach its own program), and stderr says so; a prefix under /tmp or
/var/tmp, which `PrivateTmp=yes` hides (the units cannot run from there), is
warned about too; so is a secret file that others may read (it should be
0600). So is a venv whose Python really lives (its links followed, and the `home`
its `pyvenv.cfg` names) under a home folder or a temporary one, as a venv made with
a pyenv, asdf or uv Python in /root is: the prefix is fine, yet the service cannot
start its interpreter (status 203/EXEC, restarted every 5 s); the warning says to
make the venv again with a Python outside them (`make prod PYTHON=/usr/bin/python3`).
The default prefix prints the checked-in units unchanged.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from bridge.core.config import Settings

UNITS_DIR = Path(__file__).resolve().parents[2] / "systemd"
SYSTEMD_DIR = Path("/etc/systemd/system")  # where the printed units go (`# file:` headers)
UNIT_NAMES = ("roost.service", "roost-style.service", "roost-style.timer")
DEFAULT_PREFIX = "/opt/roost"
EXECUTABLE = ".venv/bin/roost"
SECRETS = ("telegram-token", "llm-api-key", "audit-hmac-key")
"""The credential names roost reads (bridge.core.credentials, bridge.audit.keys)."""
AUDIT_KEY = "audit-hmac-key"
HOMES = (Path("/home"), Path("/root"), Path("/run/user"))
"""What `ProtectHome=yes` hides from a service."""
TMPS = (Path("/tmp"), Path("/var/tmp"))
"""What `PrivateTmp=yes` replaces with an empty folder of the service's own."""
HIDDEN = "ProtectHome=yes\n"
READ_ONLY = "ProtectHome=read-only\n"


def units_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--prefix",
        help=f"where roost is installed (default {DEFAULT_PREFIX}; another one must hold "
        f"{EXECUTABLE})",
    )
    p.add_argument(
        "--credentials",
        default="/etc/roost/credentials",
        help="directory of the secret files (one LoadCredential= line each)",
    )


def credential_lines(text: str, credentials: Path) -> str:
    """Enable `#LoadCredential=NAME:...` for each NAME whose file exists, at its real path."""
    out = []
    for line in text.splitlines(keepends=True):
        if line.startswith("#LoadCredential="):
            name = line.removeprefix("#LoadCredential=").split(":", 1)[0]
            path = credentials / name
            line = (
                f"LoadCredential={name}:{path}\n"
                if path.is_file()
                else f"#LoadCredential={name}:{path}\n"
            )
        out.append(line)
    return "".join(out)


def audit_key_line(text: str, credentials: Path) -> str:
    """roost-style.service: the audit key's `LoadCredential=` after its EnvironmentFile=
    line when the key file is present (`style sweep` appends to the audit chain)."""
    path = credentials / AUDIT_KEY
    if not path.is_file():
        return text
    out = []
    for line in text.splitlines(keepends=True):
        out.append(line)
        if line.startswith("EnvironmentFile="):
            out.append(f"LoadCredential={AUDIT_KEY}:{path}\n")
    return "".join(out)


def under_home(prefix: Path) -> bool:
    """Whether `ProtectHome=yes` would hide `prefix` from the service."""
    return any(prefix == home or prefix.is_relative_to(home) for home in HOMES)


def under_tmp(prefix: Path) -> bool:
    """Whether `PrivateTmp=yes` would hide `prefix` (or the folder it links to)."""
    return any(
        place == tmp or place.is_relative_to(tmp)
        for place in (prefix, prefix.resolve())
        for tmp in TMPS
    )


def render(name: str, prefix: str, credentials: Path) -> str:
    text = (UNITS_DIR / name).read_text().replace(DEFAULT_PREFIX, prefix.rstrip("/") or "/")
    if under_home(Path(prefix)):
        text = text.replace(HIDDEN, READ_ONLY)
    if name == "roost.service":
        return credential_lines(text, credentials)
    if name == "roost-style.service":
        return audit_key_line(text, credentials)
    return text


def interpreter(prefix: Path) -> list[Path]:
    """Where the venv of `prefix` really runs from: its `python` with every link followed,
    and the Python installation its `pyvenv.cfg` names (`home`: a venv made with
    `--copies` still reads the standard library there); none without a venv."""
    venv = prefix / ".venv"
    python = venv / "bin" / "python"
    if not python.is_symlink() and not python.exists():
        return []
    found = [Path(os.path.realpath(python))]
    try:
        lines = (venv / "pyvenv.cfg").read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    for line in lines:
        key, eq, value = line.partition("=")
        if eq and key.strip() == "home" and value.strip():
            found.append(Path(os.path.realpath(value.strip())))
    return found


def hidden_interpreter(prefix: Path) -> str | None:
    """A warning when the units would hide the venv's real Python from the service."""
    for place in interpreter(prefix):
        homes = [h for h in HOMES if place.is_relative_to(h)]
        tmps = [t for t in TMPS if place.is_relative_to(t)]
        if homes and not under_home(prefix):
            why = f"under {homes[0]}, which ProtectHome=yes hides from the service"
        elif tmps:
            why = f"under {tmps[0]}, which PrivateTmp=yes empties for the service"
        else:
            continue
        return (
            f"roost install-units: warning: {prefix / '.venv/bin/python'} is {place} (links "
            f"followed), {why}: it cannot start (status 203/EXEC). Make the venv again "
            f"with a Python outside home and temporary folders (in {prefix}: `rm -rf .venv "
            "&& make prod PYTHON=/usr/bin/python3`), then run install-units again"
        )
    return None


def warnings(prefix: Path, credentials: Path) -> list[str]:
    """What the operator should know about the printed units (stderr, one line each)."""
    said = []
    hidden = hidden_interpreter(prefix)
    if hidden is not None:
        said.append(hidden)
    if under_home(prefix):
        said.append(
            f"roost install-units: {prefix} is under a home folder, which ProtectHome=yes "
            "hides from the service: the units say ProtectHome=read-only instead (install "
            f"under {DEFAULT_PREFIX} to keep home folders hidden)"
        )
    if under_tmp(prefix):
        said.append(
            f"roost install-units: warning: {prefix} is under a temporary folder, which "
            "PrivateTmp=yes replaces with an empty one for the service: its ExecStart "
            f"cannot run. Install roost elsewhere (e.g. {DEFAULT_PREFIX}: `make prod` there) and "
            "run install-units with that prefix"
        )
    for name in SECRETS:
        path = credentials / name
        try:
            mode = path.stat().st_mode & 0o777 if path.is_file() else 0
        except OSError:
            continue
        if mode & 0o077:
            said.append(
                f"roost install-units: warning: {path} is mode {mode:04o}, readable by others; "
                f"it holds a secret: chmod 600 {path}"
            )
    return said


def run_install_units(args: argparse.Namespace, settings: Settings) -> int:
    given = args.prefix is not None
    prefix = Path(args.prefix if given else DEFAULT_PREFIX).absolute()
    if given and not (prefix / EXECUTABLE).is_file():
        print(
            f"roost install-units: there is no {prefix / EXECUTABLE}: install roost there "
            "first (`make prod` in the checkout), or give the prefix it is installed under",
            file=sys.stderr,
        )
        return 2
    if not UNITS_DIR.is_dir():
        print(
            f"roost: the unit files are not at {UNITS_DIR} (install from a checkout)",
            file=sys.stderr,
        )
        return 1
    credentials = Path(args.credentials)
    for line in warnings(prefix, credentials):
        print(line, file=sys.stderr)
    for name in UNIT_NAMES:
        sys.stdout.write(f"# file: {SYSTEMD_DIR / name}\n")
        sys.stdout.write(render(name, str(prefix), credentials))
    return 0
