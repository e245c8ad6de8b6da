"""Claude Code gets every tool of the turn through roost's MCP endpoint, end to end.

roost runs on the `claude_cli` provider; the fake `claude` reads the
`--mcp-config` the backend wrote (server `roost`, type `http`, a loopback URL
and a bearer token made for this call), first tries the endpoint without the
token (401), then connects with the official SDK's streamable-HTTP client,
lists the tools and calls `memory_save` (roost's own tool: the prompt tells
the model to use it) and alice's saved `me.csv_sum` (a real sandboxed tool)
under the names Claude Code gives them (`mcp__roost__<name>`, which must be in
`--allowedTools`), and streams the results back as text. The memory is saved
as the turn's (alice, web chat, this message); the tool runs as in any turn
(`tool.called` on channel web); the next turn's transcript shows the calls;
bob's tools are not offered; the CLI gets none of roost's tokens; the chain
(HMAC-keyed) verifies.
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
from bridge.llm.claude_cli import child_env
from bridge.types.tenant_dirs import TenantDirs
from tests.conftest import web_msg
from tests.fakes.fake_claude import calls, install, mcp_seen
from tests.mcp.conftest import BOB_ONLY, CSV_SUM, save_tool

TG_TOKEN = "123456:tg-secret-Xq81kQpL0mWvX3"
WEB_TOKEN = "web-secret-Vb5nKk2Lq"
SAVE = {
    "name": "tea",
    "type": "user",
    "description": "drinks green tea in the morning",
    "content": "Alice drinks green tea every morning.",
}


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


async def test_claude_code_calls_roosts_own_and_saved_tools_of_the_turn(
    home: Path, tmp_path: Path, alice_and_bob: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = secrets.token_hex(32).encode()
    (tmp_path / "hmac.key").write_bytes(key)
    monkeypatch.setenv("ROOST_AUDIT_HMAC_KEY_FILE", str(tmp_path / "hmac.key"))
    creds = tmp_path / "credentials"
    creds.mkdir()
    (creds / "telegram-token").write_text(TG_TOKEN)
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(creds))
    monkeypatch.setenv("ROOST_WEB__TOKEN", WEB_TOKEN)
    bin_dir = tmp_path / "bin"
    todo = [
        {"tool": "memory_save", "arguments": SAVE},
        {"tool": "me__csv_sum", "arguments": {"path": "spend.csv"}},
    ]
    exe = install(bin_dir, {"mode": "mcp", "calls": todo})
    monkeypatch.setenv("ROOST_LLM__PROVIDER", "claude_cli")
    monkeypatch.setenv("ROOST_LLM__CLAUDE_PATH", str(exe))
    monkeypatch.setenv("ROOST_LLM__TIMEOUT_S", "120")
    monkeypatch.setenv("ROOST_LOCAL_TENANT", "alice")

    roost = await build(load_settings())
    pieces: list[str] = []

    async def on_delta(piece: str) -> None:
        pieces.append(piece)

    try:
        final = await roost.core.handle(web_msg("remember my tea; what did I spend?", 1), on_delta)
        install(bin_dir, {"mode": "text", "pieces": ["Noted."]})  # the next turn
        await roost.core.handle(web_msg("thanks", 2), None)
        topic = roost.loadout.memory.store.find(roost.tenant_dirs("alice"), "tea")
    finally:
        await roost.aclose()

    assert final.kind == "answer", final.text
    assert final.text.startswith("The tool said: saved new memory 'tea' (user, 37 characters)")
    assert final.text.endswith(' | {"total": 7.75}\n\n📝 Saved to memory: tea')  # the marker
    assert "".join(pieces) == final.text  # streamed to the person as it came
    first, second = calls(bin_dir)
    argv = first["argv"]
    allowed = argv[argv.index("--allowedTools") + 1].split(",")
    assert {"mcp__roost__memory_save", "mcp__roost__me__csv_sum"} <= set(allowed)
    assert not any("bob_only" in name for name in allowed)  # bob's tools are not alice's
    (seen,) = mcp_seen(bin_dir)
    assert seen["without_token"] == 401
    assert "memory_save" in seen["listed"] and "me__csv_sum" in seen["listed"]
    assert topic is not None and topic.meta["channel"] == "web" and topic.meta["msg_id"] == "m1"
    # the calls are kept as the turn's steps: the next turn's transcript shows them
    assert "(you called: memory_save)" in second["stdin"]
    assert "(you called: me__csv_sum)" in second["stdin"]
    # roost's tokens and credentials do not reach the CLI
    for name in ("ROOST_WEB__TOKEN", "CREDENTIALS_DIRECTORY", "ROOST_AUDIT_HMAC_KEY_FILE"):
        assert name not in first["env"]

    records = _chain(home)
    called = [r for r in records if r["event"] == "tool.called"]
    assert len(called) == 1 and called[0]["tenant"] == "alice"
    assert called[0]["details"]["channel"] == "web"  # the turn's, not a side process's
    assert called[0]["details"]["outcome"] == "ok"
    assert any(r["event"] == "memory.saved" for r in records)
    assert any(r["event"] == "message.answered" for r in records)
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
