"""External MCP servers attached to a tenant, end to end through the real agent loop.

A small server written with the official SDK (tests/mcp/ext_server.py) runs
over stdio; the model is the fake OpenAI server speaking the real protocol;
roost is built by `bridge.app.build` with the real chain, sandbox and SQLite.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bridge.app.build import Roost, build
from bridge.audit.verify import verify
from bridge.core.config import ConfigError, load_settings
from bridge.loadout.vault import set_value
from bridge.mcp.names import wire_name
from bridge.mcp.source import McpTools, result_text
from bridge.types.messages import Inbound
from bridge.types.tenant_dirs import TenantDirs
from tests.fakes.fake_openai import Call, FakeOpenAI, Text, ToolCalls
from tests.mcp.conftest import chain_text

EXT = Path(__file__).with_name("ext_server.py")
API_KEY = "sk-test-key-000000000000"
EXT_TOKEN = "ext-Qm41vTz9LpX2"
VAULT_VALUE = "vault-Hk28sWq7Zr5N"


def _config(tmp_path: Path) -> str:
    """`ext` answers within a generous bound (a hang guard); `sleepy` has a short one,
    met only by its `slow` tool, which never answers in time however fast the machine."""
    py = json.dumps(sys.executable)
    return f"""
[tenants.alice]
telegram_ids = [111]

[tenants.alice.mcp.ext]
command = [{py}, {json.dumps(str(EXT))}]
env = {{ EXT_TOKEN = "{EXT_TOKEN}" }}
allow = ["add", "fail", "echo", "whoami", "dotted.name"]
timeout_s = 120

[tenants.alice.mcp.sleepy]
command = [{py}, {json.dumps(str(EXT))}]
allow = ["slow", "add"]
timeout_s = 1

[tenants.alice.mcp.broken]
command = [{py}, {json.dumps(str(EXT))}, "--crash"]
allow = ["add"]

[tenants.alice.mcp.unused]
command = ["/nonexistent/never-started"]

[tenants.bob]
telegram_ids = [222]
"""


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key=API_KEY, models=["m1"]) as server:
        yield server


@pytest.fixture
async def roost(
    home: Path, tmp_path: Path, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Roost]:
    (tmp_path / "roost.toml").write_text(_config(tmp_path))
    monkeypatch.setenv("ROOST_LLM__BASE_URL", fake.base_url)
    monkeypatch.setenv("ROOST_LLM__API_KEY", API_KEY)
    monkeypatch.setenv("ROOST_LLM__MODEL", "m1")
    monkeypatch.setenv("ROOST_LLM__MAX_RETRIES", "0")
    made = await build(load_settings())
    yield made
    await made.aclose()


def telegram(user: int, text: str) -> Inbound:
    return Inbound("telegram", str(user), str(user), text, uuid.uuid4().hex[:16])


def offered(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools", [])]


def tool_results(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def mcp_events(home: Path) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in chain_text(home).splitlines()]
    return [r for r in records if r["event"] == "mcp.called"]


async def test_the_model_calls_an_allowed_tool(roost: Roost, fake: FakeOpenAI, home: Path) -> None:
    fake.script(ToolCalls([Call("mcp__ext__add", {"a": 2, "b": 3})]), Text("It is 5."))
    final = await roost.core.handle(telegram(111, "what is 2+3?"), None)
    assert final.text == "It is 5."
    names = offered(fake.requests[0])
    assert {"mcp__ext__add", "mcp__ext__fail", "mcp__ext__echo"} <= set(names)
    assert wire_name("ext", "dotted.name") in names
    assert wire_name("ext", "dotted.name").startswith("mcp__ext__dotted_name_")
    assert "mcp__ext__admin" not in names and "mcp__ext__shout" not in names
    assert not any(n.startswith("mcp__unused__") for n in names)  # allow = [] offers nothing
    add = next(t for t in fake.requests[0]["tools"] if t["function"]["name"] == "mcp__ext__add")
    assert add["function"]["description"] == "[MCP server ext] Add two integers."
    assert set(add["function"]["parameters"]["properties"]) == {"a", "b"}
    assert tool_results(fake.requests[1]) == ["5"]
    [event] = mcp_events(home)
    assert event["tenant"] == "alice" and event["details"]["ok"] is True
    assert event["details"]["server"].startswith("n-") and event["details"]["tool"].startswith("n-")
    assert verify(home / "audit" / "chain.jsonl").ok


async def test_nothing_of_alices_servers_is_offered_to_bob(roost: Roost, fake: FakeOpenAI) -> None:
    fake.script(Text("hi"), ToolCalls([Call("mcp__ext__add", {"a": 1, "b": 1})]), Text("no"))
    await roost.core.handle(telegram(222, "hello"), None)
    assert not any(n.startswith("mcp__") for n in offered(fake.requests[0]))
    await roost.core.handle(telegram(222, "call it anyway"), None)
    assert "there is no tool named 'mcp__ext__add'" in tool_results(fake.requests[2])[0]


async def test_errors_timeouts_and_a_dead_server_are_tool_errors(
    roost: Roost, fake: FakeOpenAI, home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake.script(
        ToolCalls(
            [
                Call("mcp__ext__fail", {}),
                Call("mcp__sleepy__slow", {"seconds": 3600}),
                Call("mcp__broken__add", {"a": 1, "b": 2}),
                Call("mcp__ext__add", {"a": 1, "b": 2}),
            ]
        ),
        Text("Some tools failed."),
    )
    with caplog.at_level(logging.WARNING, logger="roost.mcp"):
        final = await roost.core.handle(telegram(111, "try them all"), None)
    assert final.text == "Some tools failed."
    broken = next(
        t for t in fake.requests[0]["tools"] if t["function"]["name"] == "mcp__broken__add"
    )
    assert "not available" in broken["function"]["description"]
    failed, slow, dead, ok = tool_results(fake.requests[1])
    assert failed.startswith("error: ext/fail answered with an error:")
    assert slow.startswith("error: sleepy/slow gave no answer within 1 s")
    assert dead.startswith("error: the MCP server 'broken' is not available")
    assert "tell the person" in dead
    assert ok == "3"
    # the server whose call timed out still works (given the time: a hang guard)
    source = next(s for s in roost.tool_sources if isinstance(s, McpTools))
    sleepy = next(link for link in source.links("alice") if link.name == "sleepy")
    sleepy.settings = sleepy.settings.model_copy(update={"timeout_s": 120})
    assert result_text(await sleepy.call("add", {"a": 2, "b": 2})) == "4"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("broken" in w for w in warnings) and any("timed out" in w for w in warnings)
    kinds = sorted(e["details"].get("error_kind", "ok") for e in mcp_events(home))
    assert kinds == ["ok", "start", "timeout", "tool"]


async def test_results_are_masked_and_the_server_sees_only_its_env(
    roost: Roost, fake: FakeOpenAI, home: Path
) -> None:
    set_value(TenantDirs.of(home, "alice").ensure(), "bank_pin", VAULT_VALUE)
    fake.script(
        ToolCalls(
            [Call("mcp__ext__echo", {"text": f"pin {VAULT_VALUE}"}), Call("mcp__ext__whoami", {})]
        ),
        Text("done"),
    )
    await roost.core.handle(telegram(111, "echo"), None)
    echoed, who = tool_results(fake.requests[1])
    assert echoed == "pin [vault:bank_pin]"
    assert f"token={EXT_TOKEN}" in who and "roost=False" in who  # roost's own env stays home
    pid = int(who.rsplit("pid=", 1)[1])
    chain = chain_text(home)
    assert VAULT_VALUE not in chain and EXT_TOKEN not in chain and "pin " not in chain
    await roost.aclose()  # the fixture closes again: closing twice is harmless
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_config_says_what_is_wrong(home: Path, tmp_path: Path) -> None:
    cases = {
        '[tenants.a.mcp.x]\nallow = ["*"]\n': "give either command",
        '[tenants.a.mcp.x]\ncommand = ["x"]\nurl = "https://h/mcp"\n': "give either command",
        '[tenants.a.mcp.x]\nurl = "ftp://h"\n': "https://",
        '[tenants.a.mcp.x]\nurl = "https://h/mcp"\nenv = { A = "b" }\n': "env goes with command",
        '[tenants.a.mcp.a__b]\ncommand = ["x"]\n': "no '__'",
    }
    for text, reason in cases.items():
        (tmp_path / "roost.toml").write_text(text)
        with pytest.raises(ConfigError, match=reason):
            load_settings()


def test_server_secrets_never_reach_a_log_line(home: Path, tmp_path: Path) -> None:
    from bridge.app.logging_setup import Redactor, secret_values

    (tmp_path / "roost.toml").write_text(
        _config(tmp_path)
        + '\n[tenants.bob.mcp.notes]\nurl = "https://notes.example/mcp"\n'
        + 'headers = { Authorization = "Bearer hdr-Vb73nQx5Kc" }\nallow = ["search"]\n'
    )
    redactor = Redactor(secret_values(load_settings()))
    line = redactor.redact(f"env {EXT_TOKEN} header Bearer hdr-Vb73nQx5Kc")
    assert EXT_TOKEN not in line and "hdr-Vb73nQx5Kc" not in line
