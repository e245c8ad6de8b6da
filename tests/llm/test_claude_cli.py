"""ClaudeCliBackend with a fake `claude` executable: stream-json, MCP tools, failures, timeout."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import time
from dataclasses import replace
from pathlib import Path

import pytest

from bridge.llm.claude_cli import ClaudeCliBackend
from bridge.mcp.turn_tools import serve_turn_tools
from bridge.types.backend import (
    BackendError,
    ChatMessage,
    Finish,
    ModelRequest,
    TextDelta,
    ToolCallRequest,
    ToolSchema,
)
from tests.conftest import web_msg
from tests.fakes.fake_claude import calls, install, mcp_seen
from tests.llm.support import collect
from tests.waits import until

TOOLS = [
    ToolSchema("me__echo", "Echo", {"type": "object"}),
    ToolSchema("memory_read", "Read a memory", {"type": "object"}),
]
CALL = ToolCallRequest("c1", "me__echo", '{"text": "x"}')
REQUEST = ModelRequest(
    "You are roost.\n\n## Memory\n(nothing saved yet)",
    [
        ChatMessage("user", "earlier question"),
        ChatMessage("assistant", "earlier answer", (CALL,)),
        ChatMessage("tool", "x", tool_call_id="c1"),
        ChatMessage("user", "[Now: Friday]"),
        ChatMessage("user", "what now?"),
    ],
    TOOLS,
    tenant="alice",
)
ENV = {"PATH": os.environ["PATH"], "ROOST_TELEGRAM__TOKEN": "123:tg-secret", "ROOST_HOME": "/h"}


@pytest.fixture
def settings_factory(home, clock):
    """A roost built from the environment, as `roost serve` builds it."""
    from bridge.app.build import build
    from bridge.core.config import load_settings
    from bridge.types.audit_sink import MemoryAudit

    async def make():
        return await build(load_settings(), audit=MemoryAudit(), clock=clock)

    return make


def _exists(path: str) -> bool:
    return Path(path).exists()


def backend(exe: Path, **kw) -> ClaudeCliBackend:
    kw.setdefault("env", ENV)
    return ClaudeCliBackend(claude_path=str(exe), **kw)


def text_of(events) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


async def failure(made: ClaudeCliBackend, caplog) -> BackendError:
    caplog.set_level(logging.WARNING, logger="bridge.llm")
    with pytest.raises(BackendError) as info:
        await collect(made, REQUEST)
    assert "(ref " in info.value.user_message
    return info.value


async def test_streams_text_and_passes_prompt_tools_and_conversation(tmp_path):
    usage = {
        "input_tokens": 3,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 20,
        "output_tokens": 9,
    }
    exe = install(tmp_path, {"mode": "text", "pieces": ["Hi ", "there."], "usage": usage})
    request = replace(REQUEST, call_tool=Recorder())
    made = backend(exe, model="sonnet", tool_server=serve_turn_tools)
    events = await collect(made, request)
    assert events == [TextDelta("Hi "), TextDelta("there."), Finish("stop", 123, 9, 100)]
    (call,) = calls(tmp_path)
    argv = call["argv"]
    assert call["system"]["mode"] == "0o600"
    assert call["system"]["text"].startswith(REQUEST.system)
    assert "`me__echo` is `mcp__roost__me__echo`" in call["system"]["text"]
    assert REQUEST.system not in " ".join(argv)  # not readable by others in /proc/PID/cmdline
    assert argv[argv.index("--model") + 1] == "sonnet"
    allowed = argv[argv.index("--allowedTools") + 1]
    assert allowed == "mcp__roost__me__echo,mcp__roost__memory_read"  # every tool offered
    assert "--strict-mcp-config" in argv and argv[argv.index("--tools") + 1] == ""
    server = call["mcp"]["roost"]
    assert server["type"] == "http" and server["url"].startswith("http://127.0.0.1:")
    assert server["headers"]["Authorization"].startswith("Bearer ")
    assert server["headers"]["Authorization"] not in " ".join(argv)  # in the 0600 file only
    assert call["stdin"].endswith("[Now: Friday]\n\nwhat now?")
    assert "Person: earlier question" in call["stdin"] and "You: earlier answer" in call["stdin"]
    assert call["pgid"] == call["pid"]  # its own process group
    assert "ROOST_TELEGRAM__TOKEN" not in call["env"] and "ROOST_HOME" in call["env"]
    assert not _exists(call["cwd"])  # the scratch directory is gone


async def test_whole_messages_are_used_when_the_cli_sends_no_partials(tmp_path):
    scenario = {"mode": "text", "pieces": ["One ", "message."], "no_partials": True}
    exe = install(tmp_path, scenario)

    made = backend(exe)
    events = await collect(made, ModelRequest("sys", [ChatMessage("user", "hi")]))
    assert events[0] == TextDelta("One message.")  # the whole assistant message, once
    assert text_of(events) == "One message."
    (call,) = calls(tmp_path)
    assert call["mcp"] is None and "--allowedTools" not in call["argv"]  # no tenant, no MCP


async def test_a_missing_cli_says_how_to_fix_it(tmp_path, caplog):
    error = await failure(backend(tmp_path / "nowhere" / "claude"), caplog)
    assert error.kind == "config" and "ROOST_LLM__CLAUDE_PATH" in error.user_message
    assert "not installed" in error.user_message


async def test_not_logged_in_says_so(tmp_path, caplog):
    error = await failure(backend(install(tmp_path, {"mode": "login"})), caplog)
    assert error.kind == "auth" and "not logged in" in error.user_message
    assert "claude" in error.user_message


async def test_a_failing_cli_gives_its_exit_status_and_logs_stderr(tmp_path, caplog):
    scenario = {"mode": "exit", "code": 3, "stderr": "TypeError at /usr/lib/node/cli.js:1"}
    error = await failure(backend(install(tmp_path, scenario)), caplog)
    assert "failed (exit status 3)" in error.user_message
    assert "/usr/lib" not in error.user_message
    assert any("cli.js" in r.getMessage() for r in caplog.records)


async def test_a_login_hint_on_stderr_is_a_login_reply(tmp_path, caplog):
    scenario = {"mode": "exit", "code": 1, "stderr": "Not logged in · Please run /login"}
    error = await failure(backend(install(tmp_path, scenario)), caplog)
    assert error.kind == "auth"


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().split(") ")[-1].startswith("Z")


async def test_silence_kills_the_whole_process_group(tmp_path, caplog):
    error = await failure(backend(install(tmp_path, {"mode": "hang"}), timeout_s=1.0), caplog)
    assert error.kind == "timeout" and "sent nothing for 1s" in error.user_message
    (call,) = calls(tmp_path)
    # SIGKILL is delivered asynchronously; no time limit is asserted
    await until(lambda: _gone(call["pid"]) and _gone(call["grandchild"]), "the group is gone")


async def test_a_slow_answer_longer_than_the_timeout_is_not_cut(tmp_path):
    pieces = [f"p{i} " for i in range(8)]
    exe = install(tmp_path, {"mode": "text", "pieces": pieces, "delay": 0.2})
    started = time.monotonic()
    events = await collect(backend(exe, timeout_s=1.0), REQUEST)
    assert text_of(events) == "".join(pieces)
    assert time.monotonic() - started > 1.0


class Recorder:
    """A request's `call_tool`: records each call, answers like a tool (or fails)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, object]]] = []
        self.tasks: list[asyncio.Task[object] | None] = []

    async def __call__(self, name: str, arguments: str) -> str:
        self.calls.append((name, json.loads(arguments)))
        self.tasks.append(asyncio.current_task())
        args = json.loads(arguments)
        if name == "memory_read":
            return "error: no memory named 'x'"
        return "echo:" + str(args.get("text", ""))


async def test_the_cli_calls_the_turns_tools_through_the_endpoint(tmp_path):
    todo = [
        {"tool": "me__echo", "arguments": {"text": "hi"}},
        {"tool": "memory_read", "arguments": {"name": "x"}},
    ]
    exe = install(tmp_path / "bin", {"mode": "mcp", "calls": todo})
    made = backend(exe, tool_server=serve_turn_tools, timeout_s=60)
    recorder = Recorder()
    runner = asyncio.current_task()
    events = await collect(made, replace(REQUEST, call_tool=recorder))
    assert text_of(events) == "The tool said: echo:hi | ERROR: error: no memory named 'x'"
    assert recorder.calls == [("me__echo", {"text": "hi"}), ("memory_read", {"name": "x"})]
    assert recorder.tasks == [runner, runner]  # run in the turn's own task, not the server's
    (seen,) = mcp_seen(tmp_path / "bin")
    assert seen["server"] == "roost" and seen["listed"] == ["me__echo", "memory_read"]
    assert seen["without_token"] == 401  # the per-call token guards the endpoint
    (call,) = calls(tmp_path / "bin")
    port = int(call["mcp"]["roost"]["url"].rsplit(":", 1)[1].split("/")[0])
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=5):
        pass  # closed with the call


async def test_a_tool_not_offered_this_step_is_not_allowed(tmp_path):
    exe = install(tmp_path / "bin", {"mode": "mcp", "tool": "me__echo", "arguments": {"text": "x"}})
    made = backend(exe, tool_server=serve_turn_tools, timeout_s=60)
    request = ModelRequest(
        "sys", [ChatMessage("user", "hi")], TOOLS[1:], tenant="alice", call_tool=Recorder()
    )
    events = await collect(made, request)
    assert "was not granted" in text_of(events)


async def test_without_call_tool_no_tool_is_offered(tmp_path):
    """A summary or a judge asks the backend without a turn's tools: no MCP at all."""
    exe = install(tmp_path / "bin", {"mode": "mcp", "tool": "me__echo"})
    made = backend(exe, tool_server=serve_turn_tools, timeout_s=60)
    events = await collect(made, REQUEST)  # tools listed, but no call_tool
    assert text_of(events) == "The tool said: no MCP server was given"
    (call,) = calls(tmp_path / "bin")
    assert "--allowedTools" not in call["argv"] and "--mcp-config" not in call["argv"]


async def test_configured_by_environment_and_streamed_to_the_chat(
    tmp_path, monkeypatch, settings_factory
):
    exe = install(tmp_path / "bin", {"mode": "text", "pieces": ["Streamed ", "reply."]})
    monkeypatch.setenv("ROOST_LLM__PROVIDER", "claude_cli")
    monkeypatch.setenv("ROOST_LLM__CLAUDE_PATH", str(exe))
    roost = await settings_factory()
    try:
        assert roost.backend.describe() == "claude_cli model=default"
        pieces: list[str] = []

        async def on_delta(piece: str) -> None:
            pieces.append(piece)

        final = await roost.core.handle(web_msg("hello", 1), on_delta)
        assert final.kind == "answer" and final.text == "Streamed reply."
        assert pieces == ["Streamed ", "reply."]
        (call,) = calls(tmp_path / "bin")
        assert call["system"]["text"].startswith("You are")
        assert call["mcp"]["roost"]["type"] == "http"  # the turn's tools, for this call
        argv = call["argv"]
        allowed = argv[argv.index("--allowedTools") + 1].split(",")
        assert "mcp__roost__memory_save" in allowed and "mcp__roost__forge_create" in allowed
    finally:
        await roost.aclose()
