"""The Claude Code CLI's side of a turn, without the process: arguments, stdin, output.

`cli_args` builds the `claude -p` command line (stream-json output, the
system prompt appended from a file, roost's MCP endpoint of this call as the
only server, every tool of the turn allowed as `mcp__roost__<name>`, Claude
Code's own tools switched off); `transcript` writes the conversation for
stdin; `mcp_config` is the JSON `--mcp-config` points at (the endpoint's URL
and bearer token); `tools_note` tells the model how its tools are named;
`LineReader` turns stream-json lines into `TextDelta` / `Finish` as they
arrive (partial `stream_event` deltas when the CLI sends them, whole
`assistant` messages otherwise; the `result` line gives usage);
`cli_failure` turns an error result, exit status or stderr into a clear
reply (not installed, not logged in, failed). No I/O.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from bridge.llm.anthropic_events import Usage
from bridge.llm.faults import ServerFault
from bridge.types.backend import (
    BackendError,
    ChatMessage,
    ModelEvent,
    TextDelta,
    ToolEndpoint,
    ToolSchema,
)

log = logging.getLogger(__name__)

SERVER = "roost"
LOGIN_HINTS = ("/login", "api key", "not logged in", "authentication", "oauth token")
NOT_LOGGED_IN = (
    "the Claude Code CLI on the server is not logged in; the operator should run `claude` "
    "once as the user roost runs as and log in (or set ANTHROPIC_API_KEY for it)"
)


def allowed_tools(tools: Sequence[ToolSchema], server: str = SERVER) -> list[str]:
    """The tools offered this step as Claude Code names them: `mcp__roost__memory_save`.

    Claude Code calls an MCP tool `mcp__<server>__<tool>` with the tool's name as the
    server lists it (the turn's wire names: `memory_save`, `me__x` for `me.x`), and in
    `-p` mode refuses one `--allowedTools` does not name.
    """
    return [f"mcp__{server}__{t.name}" for t in tools]


def tools_note(tools: Sequence[ToolSchema], server: str = SERVER) -> str:
    """The end of the system prompt when tools are offered: how they are named here."""
    if not tools:
        return ""
    first = tools[0].name
    return (
        f"\n\n(Tool names in this session: every tool named above is served by the MCP "
        f"server `{server}`, so `{first}` is `mcp__{server}__{first}`, and so on. They are "
        "the only tools you have.)"
    )


def cli_args(
    claude: str, model: str, system_file: str | None, config: str | None, allowed: Sequence[str]
) -> list[str]:
    """The command line. The system prompt goes in a file: an argument is world-readable
    in /proc/PID/cmdline and limited to 128 KiB on Linux."""
    args = [claude, "-p", "--output-format", "stream-json", "--verbose"]
    args += ["--include-partial-messages", "--no-session-persistence", "--tools", ""]
    if system_file is not None:
        args += ["--append-system-prompt-file", system_file]
    if model:
        args += ["--model", model]
    if config is not None:
        args += ["--strict-mcp-config", "--mcp-config", config]
    if allowed:
        args += ["--allowedTools", ",".join(allowed)]
    return args


def mcp_config(endpoint: ToolEndpoint, server: str = SERVER) -> str:
    """`--mcp-config`: the call's endpoint as Claude Code's streamable-HTTP server entry."""
    entry: dict[str, Any] = {
        "type": "http",
        "url": endpoint.url,
        "headers": {"Authorization": f"Bearer {endpoint.token}"},
    }
    return json.dumps({"mcpServers": {server: entry}}, indent=2)


def _speaker(message: ChatMessage) -> str:
    if message.role == "assistant":
        calls = ", ".join(c.name for c in message.tool_calls)
        said = message.content.strip()
        return f"You: {said}" + (f"\n(you called: {calls})" if calls else "")
    if message.role == "tool":
        return f"Tool result: {message.content.strip()}"
    return f"Person: {message.content.strip()}"


def transcript(messages: Sequence[ChatMessage]) -> str:
    """The conversation for stdin: earlier turns as a transcript, then the new message."""
    tail = len(messages)
    while tail > 0 and messages[tail - 1].role == "user":
        tail -= 1
    newest = "\n\n".join(m.content for m in messages[tail:] if m.content.strip())
    if tail == 0:
        return newest
    earlier = "\n\n".join(_speaker(m) for m in messages[:tail])
    return (
        "(Earlier in this conversation, oldest first)\n\n"
        f"{earlier}\n\n(The person's new message, answer it)\n\n{newest}"
    )


def failure_text(text: str) -> BackendError:
    """An error the CLI reported (result line or stderr), told safely."""
    low = text.lower()
    if any(hint in low for hint in LOGIN_HINTS):
        return ServerFault("auth", NOT_LOGGED_IN, text[:500])
    if "overloaded" in low or "529" in low or "rate limit" in low or "429" in low:
        return ServerFault(
            "rate_limited", "Claude is overloaded or rate-limited right now; try again soon", text
        )
    return ServerFault("bad_response", "the Claude Code CLI reported an error", text[:500])


def cli_failure(code: int | None, stderr: str) -> BackendError:
    """The CLI ended without a result line."""
    if stderr.strip():
        error = failure_text(stderr)
        if error.kind != "bad_response":
            return error
    detail = f"exit status {code}; stderr: {stderr.strip()[-500:] or '(empty)'}"
    return ServerFault("unavailable", f"the Claude Code CLI failed (exit status {code})", detail)


class LineReader:
    """Feed it stdout lines; it returns text as it arrives and the final usage."""

    def __init__(self) -> None:
        self.result: Mapping[str, Any] | None = None
        self._streamed: set[str] = set()  # message ids whose text came as partial deltas
        self._current = ""
        self._wrote = False  # some text went out already
        self._message_wrote = False

    def feed(self, line: bytes) -> list[ModelEvent]:
        try:
            obj = json.loads(line)
        except ValueError:
            log.debug("claude: a stdout line is not JSON: %.200r", line)
            return []
        if not isinstance(obj, Mapping):
            return []
        kind = obj.get("type")
        if kind == "stream_event":
            return self._partial(obj.get("event"))
        if kind == "assistant":
            return self._whole(obj.get("message"))
        if kind == "result":
            self.result = obj
        elif kind == "system" and obj.get("subtype") == "init":
            _check_servers(obj.get("mcp_servers"))
        return []

    def _text(self, text: str) -> list[ModelEvent]:
        if not text:
            return []
        sep = "\n\n" if self._wrote and not self._message_wrote else ""
        self._wrote = self._message_wrote = True
        return [TextDelta(sep + text)]

    def _partial(self, event: Any) -> list[ModelEvent]:
        if not isinstance(event, Mapping):
            return []
        if event.get("type") == "message_start":
            message = event.get("message")
            self._current = str(message.get("id", "")) if isinstance(message, Mapping) else ""
            self._streamed.add(self._current)
            self._message_wrote = False
        elif event.get("type") == "content_block_delta":
            delta = event.get("delta")
            if isinstance(delta, Mapping) and delta.get("type") == "text_delta":
                return self._text(str(delta.get("text") or ""))
        return []

    def _whole(self, message: Any) -> list[ModelEvent]:
        if not isinstance(message, Mapping) or str(message.get("id", "")) in self._streamed:
            return []
        self._message_wrote = False
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        text = "".join(
            str(b.get("text") or "")
            for b in blocks
            if isinstance(b, Mapping) and b.get("type") == "text"
        )
        return self._text(text)

    def finish(self) -> list[ModelEvent]:
        """After the result line: its text if none streamed, then the `Finish`."""
        result = self.result or {}
        if result.get("is_error") or str(result.get("subtype", "")).startswith("error"):
            errors = result.get("errors")
            said = result.get("result") or (errors if errors else result.get("subtype"))
            raise failure_text(str(said or "unknown error"))
        events: list[ModelEvent] = []
        if not self._wrote and isinstance(result.get("result"), str):
            events += self._text(result["result"])
        usage = Usage()
        usage.update(result.get("usage"))
        return [*events, usage.finish("stop")]


def _check_servers(servers: Any) -> None:
    for server in servers if isinstance(servers, list) else []:
        if isinstance(server, Mapping) and server.get("status") not in (None, "connected"):
            log.warning(
                "claude: MCP server %s is %s; roost's tools are unavailable this turn",
                server.get("name"),
                server.get("status"),
            )
