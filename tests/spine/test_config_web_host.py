"""`[web] host` takes a host name or an IP address only: a URL or "host:port" pasted in
is a configuration error (exit 78, naming the key), not a `roost serve` that fails later
with advice about the port (s33 N13)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bridge.core.config import ConfigError, load_settings
from tests.spine.test_config import run_roost


@pytest.mark.parametrize("host", ["http://127.0.0.1", "localhost:8080", "127.0.0.1/", "[::1]", ""])
@pytest.mark.parametrize("argv", [("doctor",), ("serve",)])
def test_a_url_or_host_port_in_web_host_exits_78(
    home: Path, argv: tuple[str, ...], host: str
) -> None:
    Path(os.environ["ROOST_CONFIG"]).write_text(f'[web]\nhost = "{host}"\nport = 8835\n')
    proc = run_roost(home, *argv)
    assert proc.returncode == 78, proc.stdout + proc.stderr
    assert "web.host" in proc.stderr and "ROOST_WEB__HOST" in proc.stderr, proc.stderr
    assert "no scheme, port or path" in proc.stderr and 'host = "127.0.0.1"' in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "0.0.0.0", "::1", "roost.lan"])
def test_a_host_name_or_ip_address_is_accepted(
    home: Path, monkeypatch: pytest.MonkeyPatch, host: str
) -> None:
    monkeypatch.setenv("ROOST_WEB__HOST", host)
    assert load_settings().web.host == host


def test_the_env_variable_is_checked_too(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROOST_WEB__HOST", "http://localhost")
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert "web.host" in str(err.value)
