"""`roost mcp --tenant T` over stdio, driven by the official MCP SDK client.

The server is a real subprocess (`python -m bridge.cli.main mcp`), its tools
run in the real sandbox, its audit events go to the real chain file. Both
protocol eras are exercised: the 2025 initialize handshake (what Claude Code
and Claude Desktop speak) and the 2026-07-28 per-request envelope.
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client

from bridge.audit.verify import verify
from bridge.loadout.vault import set_value
from bridge.types.tenant_dirs import TenantDirs
from tests.mcp.conftest import (
    BOB_ONLY,
    CSV_SUM,
    FAILING,
    REPO,
    Echo,
    allow_host,
    chain_text,
    echo_tool,
    remove_tool,
    roost_env,
    save_tool,
    stdio_params,
)
from tests.waits import HANG_S

TOKEN_VALUE = "tok-Zq81kQpL0mWvX3"


def _text(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


def _chain(home: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in chain_text(home).splitlines()]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_list_and_call_a_saved_tool(home: Path, config: Path, mode: str) -> None:
    save_tool(home, "alice", "csv_sum", CSV_SUM, "Sum a CSV column")
    save_tool(home, "bob", "bob_only", BOB_ONLY)
    workspace = TenantDirs.of(home, "alice").ensure().workspace
    (workspace / "spend.csv").write_text("item,amount\ntea,3.5\ncake,4.25\n")
    async with Client(stdio_params(home, config, "alice"), mode=mode) as client:
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == ["me__csv_sum"]
        tool = listed.tools[0]
        assert tool.title == "me.csv_sum" and "Sum a CSV column" in (tool.description or "")
        assert tool.input_schema["properties"]["path"]["type"] == "string"
        assert tool.input_schema["required"] == ["path"]
        result = await client.call_tool("me__csv_sum", {"path": "spend.csv"})
        assert not result.is_error
        assert json.loads(_text(result)) == {"total": 7.75}
        missing = await client.call_tool("me__bob_only", {})
        assert missing.is_error and "no saved tool named 'me__bob_only'" in _text(missing)
    called = [r for r in _chain(home) if r["event"] == "tool.called"]
    assert len(called) == 1
    assert called[0]["tenant"] == "alice"
    assert called[0]["details"]["channel"] == "mcp"  # type: ignore[index]
    assert called[0]["details"]["outcome"] == "ok"  # type: ignore[index]
    assert "spend.csv" not in chain_text(home)
    assert verify(home / "audit" / "chain.jsonl").ok


async def test_a_failing_tool_is_a_tool_error(home: Path, config: Path) -> None:
    save_tool(home, "alice", "divide", FAILING)
    async with Client(stdio_params(home, config, "alice"), mode="legacy") as client:
        bad = await client.call_tool("me__divide", {"n": 0})
        assert bad.is_error
        assert "me.divide failed (runtime)" in _text(bad) and "ZeroDivisionError" in _text(bad)
        wrong = await client.call_tool("me__divide", {"n": "zero"})
        assert wrong.is_error and "me.divide failed" in _text(wrong)
        good = await client.call_tool("me__divide", {"n": 1})
        assert not good.is_error and _text(good) == "1"
    outcomes = [r["details"]["outcome"] for r in _chain(home) if r["event"] == "tool.called"]  # type: ignore[index]
    assert outcomes == ["error", "error", "ok"]


async def test_a_vault_secret_reaches_the_server_never_the_client(
    home: Path, config: Path, echo: Echo
) -> None:
    allow_host(config, echo.port)
    set_value(TenantDirs.of(home, "alice").ensure(), "api_token", TOKEN_VALUE)
    save_tool(home, "alice", "echo", echo_tool(echo.port))
    async with Client(stdio_params(home, config, "alice"), mode="legacy") as client:
        result = await client.call_tool("me__echo", {})
    assert echo.seen == [f"Bearer {TOKEN_VALUE}"]  # the tool's request carried the value
    text = _text(result)
    assert not result.is_error, text
    assert "[vault:api_token]" in text  # the base64 echo of it came back masked
    encoded = base64.b64encode(f"Bearer {TOKEN_VALUE}".encode()).decode()
    assert TOKEN_VALUE not in text and encoded[8:] not in text
    chain = chain_text(home)
    assert TOKEN_VALUE not in chain and "secret.used" in chain


async def test_a_value_put_in_the_vault_later_is_masked_in_the_list(
    home: Path, config: Path
) -> None:
    """A saved tool's description named a value the operator put in the vault later:
    chat masked it, `tools/list` and `roost tools list` showed it (an attacker's pass)."""
    save_tool(home, "alice", "csv_sum", CSV_SUM, f"Sum a CSV column for {TOKEN_VALUE}")
    set_value(TenantDirs.of(home, "alice").ensure(), "project", TOKEN_VALUE)
    async with Client(stdio_params(home, config, "alice"), mode="legacy") as client:
        (tool,) = (await client.list_tools()).tools
    assert "Sum a CSV column for [vault:project]" in (tool.description or "")
    assert TOKEN_VALUE not in json.dumps(tool.model_dump(mode="json"))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bridge.cli.main", "tools", "list", "--tenant", "alice",
        env=roost_env(home, config), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), HANG_S)
    assert proc.returncode == 0, err
    assert b"me.csv_sum" in out and TOKEN_VALUE.encode() not in out


async def test_list_changed_after_save_and_remove(home: Path, config: Path) -> None:
    """Legacy clients get the notification on their connection; modern ones on a listen stream."""
    notes: asyncio.Queue[str] = asyncio.Queue()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ServerNotification):
            await notes.put(message.method)

    save_tool(home, "alice", "csv_sum", CSV_SUM)
    params = stdio_params(home, config, "alice")
    async with (
        Client(params, mode="legacy", message_handler=on_message) as legacy,
        Client(params, mode="auto") as modern,
    ):
        assert legacy.server_capabilities.tools and legacy.server_capabilities.tools.list_changed
        async with modern.listen(tools_list_changed=True) as sub:
            save_tool(home, "alice", "divide", FAILING)
            assert await asyncio.wait_for(notes.get(), HANG_S) == "notifications/tools/list_changed"
            event = await asyncio.wait_for(sub.__anext__(), HANG_S)
            assert type(event).__name__ == "ToolsListChanged"
            names = {t.name for t in (await legacy.list_tools()).tools}
            assert names == {"me__csv_sum", "me__divide"}
            names = {t.name for t in (await modern.list_tools(cache_mode="refresh")).tools}
            assert names == {"me__csv_sum", "me__divide"}

            remove_tool(home, "alice", "csv_sum")
            assert await asyncio.wait_for(notes.get(), HANG_S) == "notifications/tools/list_changed"
            await asyncio.wait_for(sub.__anext__(), HANG_S)
            assert [t.name for t in (await legacy.list_tools()).tools] == ["me__divide"]

            # a call only counts usage: no change of the list, no notification
            await legacy.call_tool("me__divide", {"n": 1})
            save_tool(home, "bob", "bob_only", BOB_ONLY)  # another tenant's change
            save_tool(home, "alice", "csv_sum", CSV_SUM)
            assert await asyncio.wait_for(notes.get(), HANG_S) == "notifications/tools/list_changed"
            assert notes.empty()


def test_an_unknown_tenant_exits_2(home: Path, config: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "bridge.cli.main", "mcp", "--tenant", "nobody"],
        env=roost_env(home, config),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert run.returncode == 2
    assert "unknown tenant 'nobody'" in run.stderr and "[tenants.nobody]" in run.stderr
    assert run.stdout == ""
