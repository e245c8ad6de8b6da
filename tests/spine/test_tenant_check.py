"""A tenant named on the command line must be one (bridge/cli/tenant_check.py): a typo in
`roost export --tenant` wrote an empty ZIP with exit 0."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from bridge.cli.export import run_export
from bridge.cli.tenant_check import unknown_tenant
from bridge.core.config import Settings, load_settings


@pytest.fixture
def settings(home: Path) -> Settings:
    return load_settings(tenants={"alice": {}})


def test_configured_tenants_pass_and_others_are_named(settings: Settings) -> None:
    assert unknown_tenant(settings, "alice", "export", files_do=False) is None
    assert unknown_tenant(settings, "local", "export", files_do=False) is None
    refusal = unknown_tenant(settings, "alcie", "export", files_do=True)
    assert refusal is not None and refusal.startswith("roost export: there is no tenant 'alcie'")
    assert "known: alice, local" in refusal


def test_a_tenant_with_files_passes_only_where_files_do(settings: Settings) -> None:
    (settings.home / "tenants" / "carol" / "global").mkdir(parents=True)
    assert unknown_tenant(settings, "carol", "export", files_do=True) is None
    assert unknown_tenant(settings, "carol", "vault set", files_do=False) is not None


def test_export_of_a_tenant_nobody_is_refuses_and_writes_nothing(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    args = argparse.Namespace(tenant="alcie", out=None)
    assert run_export(args, settings) == 2
    assert "no tenant 'alcie' in the configuration nor with files" in capsys.readouterr().err
    assert not (settings.home / "exports").exists()


def test_the_refusal_names_the_config_file_and_a_typo_first(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A newcomer told "Add [tenants.alcie] to the config file first" had to guess which
    file (s46 newcomer): the refusal names the one this process reads, and a typo first."""
    monkeypatch.setenv("ROOST_CONFIG", str(tmp_path / "etc" / "roost.toml"))
    refusal = unknown_tenant(settings, "alcie", "send", files_do=True)
    assert refusal is not None
    assert refusal.endswith(
        f"Check the spelling, or add [tenants.alcie] to {tmp_path / 'etc' / 'roost.toml'} first."
    )
    hinted = unknown_tenant(settings, "alcie", "pair", files_do=False, hint=", then run it again")
    assert hinted is not None and hinted.endswith("roost.toml first, then run it again.")
