"""Claude Code <-> roost's own MCP server, end to end.

roost runs on the `claude_cli` provider; the fake `claude` reads the
`--mcp-config` the backend wrote and starts the REAL `python -m
bridge.cli.main mcp --tenant alice` with the official SDK stdio client (its
environment the CLI's own plus the config's `env`, as Claude Code does),
lists the tools, calls alice's saved `me.csv_sum` (a real sandboxed tool) under
the name Claude Code gives it (`mcp__forge__me__csv_sum`, which must be in
`--allowedTools`), and streams the result back as text. The person sees the
tool's result; the audit chain (HMAC-keyed, the key given as the daemon gets
it) holds `tool.called` with channel `mcp` and verifies; bob's tools are not
listed; neither the CLI nor the MCP server gets roost's tokens.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from bridge.app.build import build
from bridge.audit.verify import verify
from bridge.core.config import load_settings
from bridge.llm.claude_cli import child_env, mcp_env
from bridge.types.tenant_dirs import TenantDirs
from tests.conftest import web_msg
from tests.fakes.fake_claude import calls, install, mcp_seen
from tests.mcp.conftest import BOB_ONLY, CSV_SUM, save_tool

TG_TOKEN = "123456:tg-secret-Xq81kQpL0mWvX3"
WEB_TOKEN = "web-secret-Vb5nKk2Lq"


def _chain(home: Path) -> list[dict[str, Any]]:
    lines = (home / "audit" / "chain.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture
def alice_and_bob(home: Path, tmp_path: Path) -> Path:
    config = tmp_path / "roost.toml"  # the `home` fixture points ROOST_CONFIG here
    config.write_text(
        "[tenants.alice]\ntelegram_ids = [111]\n\n[tenants.bob]\ntelegram_ids = [222]\n"
    )
    save_tool(home, "alice", "csv_sum", CSV_SUM, "Sum a CSV column")
    save_tool(home, "bob", "bob_only", BOB_ONLY)
    workspace = TenantDirs.of(home, "alice").ensure().workspace
    (workspace / "spend.csv").write_text("item,amount\ntea,3.5\ncake,4.25\n")
    return config


@pytest.mark.parametrize("key_from", ["env", "credentials"])
async def test_claude_code_calls_alices_saved_tool_through_roost_mcp(
    home: Path, tmp_path: Path, alice_and_bob: Path, monkeypatch: pytest.MonkeyPatch, key_from: str
) -> None:
    key = secrets.token_hex(32).encode()
    creds = tmp_path / "credentials"
    creds.mkdir()
    (creds / "telegram-token").write_text(TG_TOKEN)
    if key_from == "env":
        (tmp_path / "hmac.key").write_bytes(key)
        monkeypatch.setenv("ROOST_AUDIT_HMAC_KEY_FILE", str(tmp_path / "hmac.key"))
    else:
        (creds / "audit-hmac-key").write_bytes(key)
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(creds))
    monkeypatch.setenv("ROOST_WEB__TOKEN", WEB_TOKEN)
    bin_dir = tmp_path / "bin"
    scenario = {"mode": "mcp", "tool": "me__csv_sum", "arguments": {"path": "spend.csv"}}
    exe = install(bin_dir, scenario)
    monkeypatch.setenv("ROOST_LLM__PROVIDER", "claude_cli")
    monkeypatch.setenv("ROOST_LLM__CLAUDE_PATH", str(exe))
    monkeypatch.setenv("ROOST_LLM__TIMEOUT_S", "120")
    monkeypatch.setenv("ROOST_LOCAL_TENANT", "alice")

    roost = await build(load_settings())
    pieces: list[str] = []

    async def on_delta(piece: str) -> None:
        pieces.append(piece)

    try:
        final = await roost.core.handle(web_msg("what did I spend?", 1), on_delta)
    finally:
        await roost.aclose()

    assert final.kind == "answer", final.text
    assert final.text == 'The tool said: {"total": 7.75}'
    assert "".join(pieces) == final.text  # streamed to the person as it came
    (call,) = calls(bin_dir)
    argv = call["argv"]
    assert argv[argv.index("--allowedTools") + 1] == "mcp__forge__me__csv_sum"
    (seen,) = mcp_seen(bin_dir)
    assert seen["listed"] == ["me__csv_sum"]  # bob's tools are not offered to alice
    # roost's tokens reach neither the CLI nor the MCP server it starts
    assert "ROOST_WEB__TOKEN" not in call["env"] and "ROOST_WEB__TOKEN" not in seen["env"]
    assert "CREDENTIALS_DIRECTORY" not in call["env"]  # the CLI needs no roost credential
    assert "ROOST_AUDIT_HMAC_KEY_FILE" not in call["env"]
    wanted = "ROOST_AUDIT_HMAC_KEY_FILE" if key_from == "env" else "CREDENTIALS_DIRECTORY"
    assert wanted in seen["env"]  # what roost mcp needs to key the chain as the daemon does

    records = _chain(home)
    called = [r for r in records if r["event"] == "tool.called"]
    assert len(called) == 1 and called[0]["tenant"] == "alice"
    assert called[0]["details"]["channel"] == "mcp"
    assert called[0]["details"]["outcome"] == "ok"
    assert any(r["event"] == "message.answered" for r in records)  # the daemon's own records
    result = verify(home / "audit" / "chain.jsonl", key)
    assert result.ok, result.message
    assert "spend.csv" not in (home / "audit" / "chain.jsonl").read_text()


def test_the_environments_keep_secrets_out() -> None:
    base = {
        "PATH": "/usr/bin",
        "ANTHROPIC_API_KEY": "sk-ant-for-the-cli",  # the CLI's own login
        "ROOST_HOME": "/h",
        "ROOST_CONFIG": "/etc/roost/roost.toml",
        "ROOST_FORGE__PRIVATE_HOSTS": '["127.0.0.1:8080"]',
        "ROOST_TELEGRAM__TOKEN": TG_TOKEN,
        "ROOST_TELEGRAM__WEBHOOK_SECRET": "hook-secret",
        "ROOST_LLM__API_KEY": "sk-roost",
        "ROOST_WEB__TOKEN": WEB_TOKEN,
        "ROOST_TENANTS__ALICE__MCP__GH__ENV__GH_PAT": "ghp_secret",
        "ROOST_TENANTS__ALICE__MCP__GH__HEADERS__AUTHORIZATION": "Bearer x",
        "ROOST_MODELS": '{"smart": {"api_key": "sk-json"}}',
        "ROOST_AUDIT_HMAC_KEY_FILE": "/etc/roost/hmac.key",
        "CREDENTIALS_DIRECTORY": "/run/credentials/roost.service",
    }
    cli = child_env(base)
    assert sorted(cli) == [
        "ANTHROPIC_API_KEY",
        "PATH",
        "ROOST_CONFIG",
        "ROOST_FORGE__PRIVATE_HOSTS",
        "ROOST_HOME",
    ]
    server = mcp_env(base, "/srv/roost")
    assert server == {
        "ROOST_HOME": "/srv/roost",
        "ROOST_CONFIG": "/etc/roost/roost.toml",
        "ROOST_FORGE__PRIVATE_HOSTS": '["127.0.0.1:8080"]',
        "ROOST_AUDIT_HMAC_KEY_FILE": "/etc/roost/hmac.key",
        "CREDENTIALS_DIRECTORY": "/run/credentials/roost.service",
    }
