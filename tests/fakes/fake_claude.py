"""A fake `claude` (Claude Code CLI) executable, for tests.

`install(directory, scenario)` writes an executable `claude` there (a Python
script with a shebang that runs `main()` below) and `scenario.json` beside
it; `calls(directory)` reads back what each run saw (arguments, stdin, cwd,
process group, environment names). It checks its arguments as the CLI does
(`-p`; `--output-format stream-json` needs `--verbose`;
`--include-partial-messages` needs stream-json; unknown options are an
error; `--mcp-config` must hold `mcpServers`) and prints stream-json lines as
the CLI documents them: a `system`/`init` line, `stream_event` lines with the
raw Messages API events (only with `--include-partial-messages`), one
`assistant` line per message, `user` lines with tool results, and a final
`result` line with `usage`.

Scenario modes: `text` (`pieces`, `delay`, `usage`), `login` (the CLI's
"Invalid API key · Please run /login" result, exit 1), `exit` (`code`,
`stderr`, no output), `hang` (starts a grandchild in its process group, then
sleeps), `mcp` (connects to the one server of `--mcp-config` with the
official MCP SDK client: a `"type": "http"` entry over streamable HTTP with
the entry's `headers`, after one request without them, as anyone else on
the machine could send; a `command` entry over stdio, its environment the
CLI's own plus the entry's `env`), lists its tools, calls each of `calls`
(`tool`, the name the server lists, and `arguments`; or one `tool` and
`arguments`) and answers with what they returned; Claude Code names a tool
`mcp__<server>__<tool>`, and one missing from `--allowedTools` is refused, as
the CLI does in `-p` mode). `mcp_seen(directory)` reads back, per MCP run,
the server's name, the tool names listed, the status of the request without
the token (HTTP) or the names of the server's environment variables (stdio).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
VALUED = {
    "--output-format",
    "--input-format",
    "--append-system-prompt",
    "--append-system-prompt-file",
    "--system-prompt",
    "--model",
    "--mcp-config",
    "--allowedTools",
    "--allowed-tools",
    "--disallowedTools",
    "--tools",
    "--permission-mode",
    "--max-turns",
}
FLAGS = {
    "-p",
    "--print",
    "--verbose",
    "--include-partial-messages",
    "--strict-mcp-config",
    "--no-session-persistence",
}


def install(directory: Path, scenario: dict[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    exe = directory / "claude"
    exe.write_text(
        f"#!{sys.executable}\n"
        f"import sys\nsys.path.insert(0, {str(REPO)!r})\n"
        "from tests.fakes.fake_claude import main\nmain()\n"
    )
    exe.chmod(0o755)
    (directory / "scenario.json").write_text(json.dumps(scenario))
    return exe


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def calls(directory: Path) -> list[dict[str, Any]]:
    return _jsonl(directory / "calls.jsonl")


def mcp_seen(directory: Path) -> list[dict[str, Any]]:
    return _jsonl(directory / "mcp.jsonl")


def _fail(text: str, code: int = 1) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()
    raise SystemExit(code)


def parse(argv: list[str]) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in FLAGS:
            opts[arg] = True
        elif arg in VALUED:
            if i + 1 >= len(argv):
                _fail(f"error: option '{arg} <value>' argument missing")
            opts[arg] = argv[i + 1]
            i += 1
        else:
            _fail(f"error: unknown option '{arg}'")
        i += 1
    if not (opts.get("-p") or opts.get("--print")):
        _fail("error: this fake only runs with -p")
    fmt = opts.get("--output-format", "text")
    if fmt == "stream-json" and not opts.get("--verbose"):
        _fail("Error: When using --print, --output-format=stream-json requires --verbose")
    if opts.get("--include-partial-messages") and fmt != "stream-json":
        _fail("Error: --include-partial-messages requires --output-format=stream-json")
    if "--mcp-config" in opts:
        raw = opts["--mcp-config"]
        text = Path(raw).read_text() if Path(raw).exists() else raw
        config = json.loads(text)
        if not isinstance(config.get("mcpServers"), dict):
            _fail("Error: Invalid MCP configuration: mcpServers is required")
        opts["mcp"] = config["mcpServers"]
    return opts


def _system(opts: dict[str, Any]) -> dict[str, Any] | None:
    path = opts.get("--append-system-prompt-file")
    if path is None:
        return None
    return {"text": Path(path).read_text(), "mode": oct(Path(path).stat().st_mode & 0o777)}


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _message(mid: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": mid, "type": "message", "role": "assistant", "content": content}


def say(opts: dict[str, Any], pieces: list[str], delay: float = 0.0) -> None:
    """One assistant message: partial events (if asked for), then the whole message."""
    mid = f"msg_{uuid.uuid4().hex[:20]}"
    if opts.get("--include-partial-messages"):
        start = {"type": "message_start", "message": _message(mid, [])}
        emit({"type": "stream_event", "event": start})
        block = {"type": "text", "text": ""}
        emit(
            {
                "type": "stream_event",
                "event": {"type": "content_block_start", "index": 0, "content_block": block},
            }
        )
        for piece in pieces:
            delta = {"type": "text_delta", "text": piece}
            event = {"type": "content_block_delta", "index": 0, "delta": delta}
            emit({"type": "stream_event", "event": event})
            if delay:
                time.sleep(delay)
        emit({"type": "stream_event", "event": {"type": "message_stop"}})
    emit(
        {"type": "assistant", "message": _message(mid, [{"type": "text", "text": "".join(pieces)}])}
    )


def result(text: str, usage: dict[str, int] | None = None, error: bool = False) -> None:
    emit(
        {
            "type": "result",
            "subtype": "success",
            "is_error": error,
            "result": text,
            "session_id": "s1",
            "usage": usage or {"input_tokens": 5, "output_tokens": 7},
        }
    )


def call_tools(opts: dict[str, Any], calls: list[dict[str, Any]], here: Path) -> str:
    """Connect to the one server of `--mcp-config` as Claude Code does, list its tools,
    call each of `calls` ({"tool", "arguments"}) in order; the results joined by " | "."""
    import anyio
    from mcp import ClientSession

    ((server, entry),) = opts["mcp"].items()
    allowed = str(opts.get("--allowedTools", "")).split(",")
    seen: dict[str, Any] = {"server": server}

    async def session_calls(session: ClientSession) -> list[str]:
        await session.initialize()
        listed = [t.name for t in (await session.list_tools()).tools]
        seen["listed"] = listed
        said = []
        for call in calls:
            tool, arguments = call["tool"], call.get("arguments", {})
            wire = f"mcp__{server}__{tool}"
            if wire not in allowed:
                said.append(f"Claude requested permissions to use {wire}, but it was not granted")
            elif tool not in listed:
                said.append(f"no tool {tool}")
            else:
                out = await session.call_tool(tool, arguments)
                text = " ".join(getattr(c, "text", "") for c in out.content)
                said.append(("ERROR: " if out.is_error else "") + text)
        return said

    async def over_http() -> list[str]:
        import httpx
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        async with httpx.AsyncClient() as raw:  # what anyone else on the machine gets
            probe = await raw.post(entry["url"], json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            seen["without_token"] = probe.status_code
        http = create_mcp_http_client(headers=entry.get("headers", {}))
        async with (
            http,
            streamable_http_client(entry["url"], http_client=http) as (read, write, *_),
            ClientSession(read, write) as session,
        ):
            return await session_calls(session)

    async def over_stdio() -> list[str]:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        env = {**os.environ, **entry.get("env", {})}
        seen["env"] = sorted(env)
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return await session_calls(session)

    said = anyio.run(over_http if entry.get("type") == "http" else over_stdio)
    with (here / "mcp.jsonl").open("a") as out:
        out.write(json.dumps(seen) + "\n")
    return " | ".join(said)


def main() -> None:
    here = Path(sys.argv[0]).resolve().parent
    opts = parse(sys.argv[1:])
    stdin = sys.stdin.read()
    scenario = json.loads((here / "scenario.json").read_text())
    record = {
        "argv": sys.argv[1:],
        "stdin": stdin,
        "cwd": os.getcwd(),
        "pid": os.getpid(),
        "pgid": os.getpgid(0),
        "env": sorted(
            k for k in os.environ if k.startswith(("ROOST_", "ANTHROPIC_", "CREDENTIALS_"))
        ),
        "mcp": opts.get("mcp"),
        "system": _system(opts),
    }
    mode = scenario["mode"]
    if mode == "hang":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        record["grandchild"] = child.pid
    with (here / "calls.jsonl").open("a") as log:
        log.write(json.dumps(record) + "\n")
    if mode == "exit":
        _fail(scenario.get("stderr", ""), scenario.get("code", 1))
    servers = [{"name": n, "status": "connected"} for n in opts.get("mcp", {})]
    emit({"type": "system", "subtype": "init", "session_id": "s1", "mcp_servers": servers})
    if mode == "hang":
        time.sleep(600)
    elif mode == "login":
        text = "Invalid API key · Please run /login"
        say({}, [text])
        result(text, error=True)
        raise SystemExit(1)
    elif mode == "mcp":
        todo = scenario.get("calls") or [
            {"tool": scenario["tool"], "arguments": scenario.get("arguments", {})}
        ]
        said = call_tools(opts, todo, here) if "mcp" in opts else "no MCP server was given"
        say(opts, ["The tool said: ", said])
        result("The tool said: " + said)
    else:
        pieces = scenario.get("pieces", ["Hello ", "from ", "Claude."])
        if scenario.get("no_partials"):  # as a CLI too old for --include-partial-messages
            opts.pop("--include-partial-messages", None)
        say(opts, pieces, scenario.get("delay", 0.0))
        result("".join(pieces), scenario.get("usage"))
