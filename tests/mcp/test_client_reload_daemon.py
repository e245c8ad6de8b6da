"""External MCP servers follow a reload: the real daemon as a subprocess, SIGHUP.

`roost serve` starts with no MCP server for the local tenant. The config file
gains `[tenants.local.mcp.gate]` (tests/mcp/gate_server.py over stdio); after
SIGHUP the model is offered its tools and a call works. A changed entry (a new
`env`) is a new session, the old server process ends. A turn whose tool call
is running when the server is removed keeps its session to the end (its next
step calls the server again); new turns are no longer offered the tools, and
the server process ends after that turn.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.fakes.fake_openai import Call, FakeOpenAI, Response, Text, ToolCalls, last_user_text
from tests.models.conftest import write_config
from tests.models.test_reload_daemon import until
from tests.spine.test_daemon import env_for, start_daemon

GATE = Path(__file__).with_name("gate_server.py")


def gate_config(mark: str) -> str:
    command = json.dumps([sys.executable, str(GATE)])
    return (
        f"[tenants.local.mcp.gate]\ncommand = {command}\n"
        f'env = {{ MARK = "{mark}" }}\nallow = ["pid", "wait"]\ntimeout_s = 60\n'
    )


def model(gate_file: Path) -> Any:
    def respond(body: dict[str, Any]) -> Response:
        messages = body["messages"]
        if messages[-1]["role"] == "tool":
            if messages[-1]["content"].startswith("opened by"):  # then a second call
                return ToolCalls([Call("mcp__gate__pid", {})])
            turn = messages[max(i for i, m in enumerate(messages) if m["role"] == "user") :]
            return Text(
                "tool said: " + " | ".join(m["content"] for m in turn if m["role"] == "tool")
            )
        asked = last_user_text(body)
        if asked == "pid please":
            return ToolCalls([Call("mcp__gate__pid", {})])
        if asked == "wait please":
            return ToolCalls([Call("mcp__gate__wait", {"path": str(gate_file)})])
        names = sorted(t["function"]["name"] for t in body.get("tools") or [])
        return Text("tools: " + (" ".join(n for n in names if n.startswith("mcp__")) or "none"))

    return respond


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as server:
        yield server


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # the process may be reaped between the signal and the read: then it is gone
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1]
    except FileNotFoundError:
        return False
    return not state.startswith("Z")


def pid_of(reply: str) -> int:
    assert reply.startswith("tool said: pid="), reply
    return int(reply.split("pid=")[1].split()[0])


async def test_sighup_adds_changes_and_removes_an_mcp_server(
    home: Path, tmp_path: Path, fake: FakeOpenAI
) -> None:
    gate_file = tmp_path / "gate-open"
    fake.responder = model(gate_file)
    # not blank: env_for would add tenants alice and bob, and a reload to a file without
    # them all is refused (tests/spine/test_reload_no_tenant.py)
    write_config("# the local tenant only\n")
    daemon = await start_daemon(env_for(home, fake))
    token = (home / "web-token").read_text().strip()
    auth = {"Authorization": f"Bearer {token}"}

    def hup(config: str) -> None:
        write_config(config)
        daemon.proc.send_signal(signal.SIGHUP)

    try:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{daemon.port}") as http:

            async def say(text: str, chat: str = "b") -> str:
                r = await http.post("/api/chat", json={"text": text, "chat": chat}, headers=auth)
                return str((await r.json())["reply"])

            async def offered(chat: str = "b") -> str:
                return await say("tools?", chat)

            assert await offered() == "tools: none"
            hup(gate_config("one"))
            await until(lambda: shows(offered(), "mcp__gate__pid mcp__gate__wait"))
            said = await say("pid please")
            first = pid_of(said)
            assert "mark=one" in said and alive(first)

            hup(gate_config("two"))  # changed: a new session, the old server ends
            await until(lambda: shows(say("pid please"), "mark=two"))
            second = pid_of(await say("pid please"))
            assert second != first
            await until(lambda: not alive(first))

            waiting = asyncio.ensure_future(say("wait please", chat="a"))
            await until(lambda: Path(str(gate_file) + ".waiting").exists())
            hup("# no MCP server\n")  # removed while a turn's call runs on it
            await until(lambda: shows(offered("c"), "tools: none"))
            assert await offered("c") == "tools: none"  # new turns are not offered its tools
            assert alive(second) and not waiting.done()  # the running turn keeps its session
            gate_file.write_text("open")
            # its next step calls the removed server again: still the same session
            assert await waiting == f"tool said: opened by pid={second} | pid={second} mark=two"
            await until(lambda: not alive(second))  # closed once that turn ended
    finally:
        code, stderr = await daemon.stop()
    assert code == 0, stderr
    assert "applied only after a restart: tenants" not in stderr
    assert "ERROR" not in stderr


async def shows(reply: Any, text: str) -> bool:
    return text in await reply
