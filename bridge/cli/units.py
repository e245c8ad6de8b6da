"""`roost install-units [--prefix DIR]`: print the systemd units for an installation.

The units of `systemd/` are printed with `/opt/roost` replaced by the prefix
(ExecStart, Documentation), each under a `# file: /etc/systemd/system/NAME`
header, ready to be split into files. roost.service gets one
`LoadCredential=` line for each secret file present in the credentials
directory (`--credentials`, default /etc/roost/credentials); an absent one
stays a comment, because systemd refuses to start a unit whose credential
file is missing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bridge.core.config import Settings

UNITS_DIR = Path(__file__).resolve().parents[2] / "systemd"
UNIT_NAMES = ("roost.service", "roost-style.service", "roost-style.timer")
DEFAULT_PREFIX = "/opt/roost"
SECRETS = ("telegram-token", "llm-api-key", "audit-hmac-key")
"""The credential names roost reads (bridge.core.credentials, bridge.audit.keys)."""


def units_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prefix", default=DEFAULT_PREFIX, help="where roost is installed")
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


def render(name: str, prefix: str, credentials: Path) -> str:
    text = (UNITS_DIR / name).read_text().replace(DEFAULT_PREFIX, prefix.rstrip("/") or "/")
    return credential_lines(text, credentials) if name == "roost.service" else text


def run_install_units(args: argparse.Namespace, settings: Settings) -> int:
    prefix = str(Path(args.prefix).absolute())
    if not UNITS_DIR.is_dir():
        print(
            f"roost: the unit files are not at {UNITS_DIR} (install from a checkout)",
            file=sys.stderr,
        )
        return 1
    for name in UNIT_NAMES:
        sys.stdout.write(f"# file: /etc/systemd/system/{name}\n")
        sys.stdout.write(render(name, prefix, Path(args.credentials)))
    return 0
