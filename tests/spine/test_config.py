"""Configuration: file + environment, nesting, precedence and clear errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.core.config import ConfigError, load_settings
from tests.waits import HANG_S


def test_defaults_are_the_embedded_ones(home: Path) -> None:
    s = load_settings()
    assert s.home == home
    assert (s.web.host, s.web.port) == ("127.0.0.1", 8787)
    assert s.llm.provider == "auto"
    assert s.limits.max_message_chars == 16_000
    assert s.local_tenant == "local"


def test_file_and_env_nesting_env_wins(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Path(os.environ["ROOST_CONFIG"]).write_text(
        '[llm]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "from-file"\n'
        "[web]\nport = 9000\n"
        "[tenants.alice]\ntelegram_ids = [111111]\n"
    )
    monkeypatch.setenv("ROOST_LLM__MODEL", "from-env")
    s = load_settings()
    assert s.llm.model == "from-env"
    assert s.llm.base_url == "http://127.0.0.1:9/v1"
    assert s.web.port == 9000
    assert s.tenants["alice"].telegram_ids == [111111]


@pytest.mark.parametrize(
    ("env", "toml", "needle"),
    [
        ({"ROOST_WEB__PORT": "99999"}, "", "web.port"),
        ({"ROOST_LLM__PROVIDER": "magic"}, "", "llm.provider"),
        ({}, "[llm]\nbase_url = 'ftp://x'\n", "llm.base_url"),
        ({}, "[tenants.Bad_Name]\n", "tenants"),
        ({}, "[web]\nprot = 1\n", "web.prot: unknown setting"),
        # one underscore where two were meant: pydantic-settings would ignore it silently
        ({"ROOST_WEB_PORT": "9999"}, "", "ROOST_WEB_PORT: unknown setting; a section's key"),
        ({"ROOST_LLM_MODEL": "m"}, "", "takes two underscores: ROOST_LLM__MODEL"),
        ({}, "[tenants.a]\ntelegram_ids=[1]\n[tenants.b]\ntelegram_ids=[1]\n", "telegram id 1"),
    ],
)
def test_invalid_configuration_names_key(
    home: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], toml: str, needle: str
) -> None:
    Path(os.environ["ROOST_CONFIG"]).write_text(toml)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert needle in str(err.value)


def test_top_level_and_unrelated_roost_variables_still_pass(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in {
        "ROOST_LOG_LEVEL": "INFO",
        "ROOST_LOCAL_TENANT": "me",
        "ROOST_REQUIRE_POSTGRES": "1",
        "ROOST_WEB__PORT": "9001",
    }.items():
        monkeypatch.setenv(key, value)
    s = load_settings()
    assert (s.local_tenant, s.web.port) == ("me", 9001)


def test_unreadable_toml_is_a_config_error(home: Path) -> None:
    Path(os.environ["ROOST_CONFIG"]).write_text("[llm\n")
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings()


def test_cli_exits_78_on_bad_config(home: Path) -> None:
    env = {**os.environ, "ROOST_WEB__PORT": "not-a-port"}
    proc = subprocess.run(
        [sys.executable, "-m", "bridge.cli.main", "serve"],
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert proc.returncode == 78
    assert "web.port" in proc.stderr
    assert "ROOST_WEB__PORT" in proc.stderr


def test_unusable_home_exits_78(home: Path) -> None:
    env = {**os.environ, "ROOST_HOME": "/proc/roost-cannot-live-here"}
    proc = subprocess.run(
        [sys.executable, "-m", "bridge.cli.main", "send", "hi"],
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert proc.returncode == 78
    assert "ROOST_HOME" in proc.stderr and "Traceback" not in proc.stderr


def run_roost(home: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_LLM__")}
    return subprocess.run(
        [sys.executable, "-m", "bridge.cli.main", *argv],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )


@pytest.mark.parametrize("argv", [("serve",), ("send", "hi")])
@pytest.mark.parametrize(
    "env",
    [
        {"ROOST_LLM__PROVIDER": "openai"},
        {"ROOST_LLM__PROVIDER": "openai", "ROOST_LLM__API_KEY": "   ", "ROOST_LLM__BASE_URL": ""},
    ],
    ids=["nothing-set", "blank-values"],
)
def test_openai_without_a_server_is_a_config_error(
    home: Path, argv: tuple[str, ...], env: dict[str, str]
) -> None:
    proc = run_roost(home, *argv, **env)
    assert proc.returncode == 78, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    for key in ("llm.base_url", "ROOST_LLM__BASE_URL", "llm.api_key", "ROOST_LLM__API_KEY"):
        assert key in lines[0]
    assert not home.exists()  # refused before anything was created


@pytest.mark.parametrize("argv", [("serve",), ("send", "hi")])
@pytest.mark.parametrize("where", ["env", "file"])
def test_anthropic_without_a_key_is_a_config_error(
    home: Path, argv: tuple[str, ...], where: str
) -> None:
    """Exit 78 (systemd's RestartPreventExitStatus) with one line naming the key, no traceback."""
    if where == "file":
        Path(os.environ["ROOST_CONFIG"]).write_text('[llm]\nprovider = "anthropic"\n')
        proc = run_roost(home, *argv)
    else:
        proc = run_roost(home, *argv, ROOST_LLM__PROVIDER="anthropic", ROOST_LLM__API_KEY=" ")
    assert proc.returncode == 78, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "llm.api_key" in lines[0] and "ROOST_LLM__API_KEY" in lines[0]
    assert not home.exists()  # refused before anything was created


def test_a_named_anthropic_model_without_a_key_names_its_table(home: Path) -> None:
    Path(os.environ["ROOST_CONFIG"]).write_text('[models.claude]\nprovider = "anthropic"\n')
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert "models.claude.api_key" in str(err.value)
    assert "ROOST_MODELS__CLAUDE__API_KEY" in str(err.value)


@pytest.mark.parametrize("argv", [("serve",), ("send", "hi")])
def test_an_empty_model_name_is_a_config_error(home: Path, argv: tuple[str, ...]) -> None:
    proc = run_roost(home, *argv, ROOST_LLM__BASE_URL="http://127.0.0.1:9/v1", ROOST_LLM__MODEL=" ")
    assert proc.returncode == 78, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "llm.model" in lines[0] and "ROOST_LLM__MODEL" in lines[0]


@pytest.mark.parametrize(
    "env",
    [
        {"ROOST_LLM__BASE_URL": "http://127.0.0.1:11434/v1"},  # a local server needs no key
        {"ROOST_LLM__API_KEY": "sk-test"},  # a key alone means api.openai.com
    ],
)
def test_openai_with_a_url_or_a_key_is_accepted(
    home: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str]
) -> None:
    monkeypatch.setenv("ROOST_LLM__PROVIDER", "openai")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert load_settings().llm.provider == "openai"


LOGIN_URL = "http://user:pw-9f8e7d@127.0.0.1:9/v1"


@pytest.mark.parametrize("argv", [("doctor",), ("send", "hi")])
def test_a_login_in_the_url_and_a_key_is_a_config_error(home: Path, argv: tuple[str, ...]) -> None:
    """aiohttp refuses a request with both (a ValueError at every turn: the person read
    only "Something went wrong"); every command now says which two settings clash,
    without the password."""
    proc = run_roost(
        home, *argv, ROOST_LLM__BASE_URL=LOGIN_URL, ROOST_LLM__API_KEY="sk-test-0123456789abc"
    )
    assert proc.returncode == 78, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "llm.base_url" in lines[0] and "llm.api_key" in lines[0]
    assert "pw-9f8e7d" not in proc.stderr + proc.stdout


def test_a_login_in_a_named_models_url_names_its_table(home: Path) -> None:
    Path(os.environ["ROOST_CONFIG"]).write_text(
        f'[models.proxy]\nbase_url = "{LOGIN_URL}"\napi_key = "sk-test"\nmodel = "m"\n'
    )
    with pytest.raises(ConfigError, match=r"models\.proxy\.base_url"):
        load_settings()


def test_a_login_in_the_url_alone_is_accepted(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROOST_LLM__BASE_URL", LOGIN_URL)  # sent as basic auth
    assert load_settings().llm.base_url == LOGIN_URL


def test_offline_needs_no_model_name(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROOST_LLM__MODEL", "")
    assert load_settings().llm.provider == "auto"  # auto without url or key -> offline


SHARED = "aaaaaaaaaaaaaaaaaaaa"


@pytest.mark.parametrize("argv", [("doctor",), ("serve",), ("send", "hi")])
def test_a_web_token_used_twice_is_refused_by_every_command(
    home: Path, argv: tuple[str, ...]
) -> None:
    """Two tenants with one `web_token`: doctor does not call it loaded while serve refuses
    it; every command exits 78 with the same line."""
    tenants = f'[tenants.bob]\nweb_token = "{SHARED}"\n[tenants.carl]\nweb_token = "{SHARED}"\n'
    Path(os.environ["ROOST_CONFIG"]).write_text(tenants)
    proc = run_roost(home, *argv, ROOST_LLM__PROVIDER="offline")
    assert proc.returncode == 78, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "roost: invalid configuration: tenants.carl.web_token: the same token is used twice"
    ]
    assert "config loaded" not in proc.stdout


def test_a_tenant_token_that_is_the_web_token_is_refused(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Path(os.environ["ROOST_CONFIG"]).write_text(f'[tenants.bob]\nweb_token = "{SHARED}"\n')
    monkeypatch.setenv("ROOST_WEB__TOKEN", SHARED)
    with pytest.raises(ConfigError, match=r"tenants\.bob\.web_token: the same token is used"):
        load_settings()
