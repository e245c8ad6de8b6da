"""`roost doctor` checks the configured provider with that provider's own protocol.

An Anthropic key goes to the Anthropic API only (`x-api-key`), never as a
Bearer token to an OpenAI URL; `claude_cli` checks that the executable exists.
"""

from __future__ import annotations

from pathlib import Path

from bridge.cli.doctor_net import check_backend
from bridge.core.config import load_settings
from tests.fakes.fake_anthropic import FakeAnthropic

KEY = "sk-ant-doctor-0123456789"


async def test_anthropic_is_asked_for_its_models_with_its_own_headers(home, monkeypatch):
    async with FakeAnthropic(api_key=KEY, models=["claude-test-1"]) as fake:
        monkeypatch.setenv("ROOST_LLM__PROVIDER", "anthropic")
        monkeypatch.setenv("ROOST_LLM__BASE_URL", fake.base_url)
        monkeypatch.setenv("ROOST_LLM__API_KEY", KEY)
        monkeypatch.setenv("ROOST_LLM__MODEL", "claude-test-1")
        check = await check_backend(load_settings(), 5.0)
    assert check.status == "ok", check
    assert "claude-test-1 among them" in check.reason and KEY not in check.reason
    (headers,) = fake.headers
    assert headers["x-api-key"] == KEY and "Authorization" not in headers


async def test_claude_cli_checks_the_executable(home, monkeypatch, tmp_path: Path):
    monkeypatch.setenv("ROOST_LLM__PROVIDER", "claude_cli")
    monkeypatch.setenv("ROOST_LLM__CLAUDE_PATH", str(tmp_path / "no-claude"))
    check = await check_backend(load_settings(), 5.0)
    assert check.status == "FAIL" and "not found" in check.reason
    exe = tmp_path / "claude"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("ROOST_LLM__CLAUDE_PATH", str(exe))
    check = await check_backend(load_settings(), 5.0)
    assert check.status == "ok" and str(exe) in check.reason
