"""`roost install-units` and secrets as systemd credentials.

The printed roost.service is Type=notify with a watchdog, carries the
prefix's ExecStart and a LoadCredential= line for each secret file present
(checked with `systemd-analyze verify` when installed); settings read the
bot token and API key from `$CREDENTIALS_DIRECTORY`, under the environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.core.config import load_settings
from tests.waits import HANG_S

ROOST = [sys.executable, "-m", "bridge.cli.main"]
PREFIX = Path(sys.executable).parents[2]  # the checkout whose .venv runs these tests


def install_units(home: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "CREDENTIALS_DIRECTORY"}
    proc = subprocess.run(
        [*ROOST, "install-units", *args], env=env, capture_output=True, text=True, timeout=HANG_S
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def split_units(out: str) -> dict[str, str]:
    units: dict[str, str] = {}
    for block in out.split("# file: /etc/systemd/system/")[1:]:
        name, _, text = block.partition("\n")
        units[name] = text
    return units


def test_install_units_prints_the_prefix_and_present_credentials(
    home: Path, tmp_path: Path
) -> None:
    creds = tmp_path / "credentials"
    creds.mkdir()
    (creds / "telegram-token").write_text("123456:AAH-fake-token\n")
    (creds / "llm-api-key").write_text("sk-fake\n")
    units = split_units(install_units(home, "--prefix", str(PREFIX), "--credentials", str(creds)))
    assert set(units) == {"roost.service", "roost-style.service", "roost-style.timer"}
    service = units["roost.service"].splitlines()
    assert f"ExecStart={PREFIX}/.venv/bin/roost serve" in service
    assert {"Type=notify", "NotifyAccess=main", "WatchdogSec=30"} <= set(service)
    assert f"LoadCredential=telegram-token:{creds}/telegram-token" in service
    assert f"LoadCredential=llm-api-key:{creds}/llm-api-key" in service
    assert f"#LoadCredential=audit-hmac-key:{creds}/audit-hmac-key" in service  # absent file
    assert "/opt/roost" not in "".join(units.values())
    assert f"ExecStart={PREFIX}/.venv/bin/roost style sweep" in units["roost-style.service"]
    analyze = shutil.which("systemd-analyze")
    if analyze is not None:
        unit = tmp_path / "roost.service"
        unit.write_text(units["roost.service"])
        proc = subprocess.run(
            [analyze, "verify", str(unit)], capture_output=True, text=True, timeout=HANG_S
        )
        assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(Path("/etc/roost/credentials").exists(), reason="a real install is here")
def test_the_default_prefix_is_the_checked_in_unit(home: Path) -> None:
    units = split_units(install_units(home))
    checked_in = Path(__file__).resolve().parents[2] / "systemd"
    assert units == {name: (checked_in / name).read_text() for name in units}


def test_secrets_come_from_credentials_below_the_environment(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Path(os.environ["ROOST_CONFIG"]).write_text(
        '[llm]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\napi_key = "sk-from-file"\n'
    )
    (tmp_path / "telegram-token").write_text("123456:AAH-from-credential\n")
    (tmp_path / "llm-api-key").write_text("sk-from-credential\n")
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
    s = load_settings()
    assert s.telegram.token is not None
    assert s.telegram.token.get_secret_value() == "123456:AAH-from-credential"
    assert s.llm.api_key is not None and s.llm.api_key.get_secret_value() == "sk-from-credential"
    assert s.llm.base_url == "http://127.0.0.1:9/v1"  # the rest of the section stays
    monkeypatch.setenv("ROOST_LLM__API_KEY", "sk-from-env")
    s = load_settings()
    assert s.llm.api_key is not None and s.llm.api_key.get_secret_value() == "sk-from-env"


def test_an_empty_or_absent_credential_sets_nothing(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "telegram-token").write_text("\n")
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
    s = load_settings()
    assert s.telegram.token is None and s.llm.api_key is None
