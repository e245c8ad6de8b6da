"""`roost vault set|list|rm` and the CLI table rows."""

from __future__ import annotations

import argparse
import io
import json
import stat
from pathlib import Path

import pytest

from bridge.cli.loadout import run_prompt, vault_command
from bridge.cli.main import build_parser
from bridge.cli.table import COMMANDS
from bridge.core.config import Settings, load_settings
from bridge.types.tenant_dirs import TenantDirs


@pytest.fixture
def settings(home: Path) -> Settings:
    """alice is configured; bob is not."""
    return load_settings(tenants={"alice": {}})


def run(settings: Settings, argv: list[str], stdin: str = "") -> tuple[int, str, str]:
    args = build_parser().parse_args(["vault", *argv])
    assert isinstance(args, argparse.Namespace)
    out, err = io.StringIO(), io.StringIO()
    code = vault_command(settings, args, io.StringIO(stdin), out, err)
    return code, out.getvalue(), err.getvalue()


def test_vault_set_list_rm(settings: Settings) -> None:
    code, out, _ = run(settings, ["set", "alice", "GITHUB_TOKEN"], "ghp_verysecretvalue\n")
    assert code == 0 and "ghp_" not in out and "GITHUB_TOKEN" in out
    path = TenantDirs.of(settings.home, "alice").vault / "GITHUB_TOKEN"
    assert path.read_text() == "ghp_verysecretvalue"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert run(settings, ["list", "alice"])[1] == "GITHUB_TOKEN\n"
    assert run(settings, ["list", "local"])[1] == "(no secrets)\n"
    code, _, err = run(settings, ["rm", "local", "GITHUB_TOKEN"])
    assert code == 1 and "no secret" in err
    assert run(settings, ["rm", "alice", "GITHUB_TOKEN"])[0] == 0
    assert not path.exists()
    chain = settings.home / "audit" / "chain.jsonl"
    records = [json.loads(line) for line in chain.read_text().splitlines()]
    assert [(r["event"], r["tenant"], r["details"]["name"]) for r in records] == [
        ("secret.stored", "alice", "GITHUB_TOKEN"),
        ("secret.removed", "alice", "GITHUB_TOKEN"),
    ]
    assert "verysecret" not in chain.read_text()


def test_vault_refuses_bad_names_and_short_values(settings: Settings) -> None:
    code, _, err = run(settings, ["set", "alice", "../escape"], "value-1234")
    assert code == 2 and "must start with a letter" in err
    assert not (settings.home / "tenants" / "alice" / "escape").exists()
    code, _, err = run(settings, ["set", "alice", "PIN"], "123\n")
    assert code == 2 and "at least 4" in err


def test_rows_are_in_the_cli_table() -> None:
    names = [row.name for row in COMMANDS]
    assert "prompt" in names and "vault" in names
    args = build_parser().parse_args(["prompt", "--tenant", "alice", "--channel", "telegram"])
    assert args.tenant == "alice" and args.channel == "telegram" and not args.raw


def test_a_tenant_nobody_configured_is_refused_and_nothing_is_made(settings: Settings) -> None:
    for argv, stdin in ((["set", "bob", "TOKEN"], "value-1234\n"), (["list", "bob"], "")):
        code, out, err = run(settings, argv, stdin)
        assert code == 2 and out == ""
        assert "no tenant 'bob' in the configuration" in err and "alice" in err
    assert not (settings.home / "tenants" / "bob").exists()
    assert not (settings.home / "audit" / "chain.jsonl").exists()


def test_a_tenant_that_left_the_config_keeps_its_secrets_listable(settings: Settings) -> None:
    assert run(settings, ["set", "alice", "TOKEN"], "value-1234\n")[0] == 0
    gone = settings.model_copy(update={"tenants": {}})
    assert run(gone, ["list", "alice"]) == (0, "TOKEN\n", "")
    assert run(gone, ["rm", "alice", "TOKEN"])[0] == 0
    code, _, err = run(gone, ["set", "alice", "OTHER"], "value-1234\n")
    assert code == 2 and "no tenant 'alice' in the configuration" in err


def test_prompt_refuses_a_channel_no_platform_is(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    """s46: `roost prompt --channel whatsap` printed a generic prompt no channel ever sends,
    and `--help` named only web, cli and telegram."""
    args = build_parser().parse_args(["prompt", "--channel", "whatsap"])
    assert run_prompt(args, settings) == 2
    err = capsys.readouterr().err
    assert err == (
        "roost prompt: no channel 'whatsap' (known: cli, matrix, mcp, telegram, web, whatsapp)\n"
    )
    assert not (settings.home / "tenants").exists()  # nothing built
