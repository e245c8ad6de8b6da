"""The `claude_cli` backend: one `claude -p` subprocess per model call.

The CLI (Claude Code, logged in on the server) runs in its own process group
in an empty temporary directory, with the assembled system prompt appended
(`--append-system-prompt-file`, a 0600 file there, never an argument anyone
can read in /proc) and the conversation on stdin. The turn's tools (all of
them: memory, forge_create and drafts, skills, schedule, recall, the
tenant's `me.*` tools and attached MCP servers) reach it through the injected
`ToolServer`: roost's MCP endpoint for this one call (`bridge.mcp.turn_tools`,
loopback HTTP, a bearer token made for the call, closed when the call ends),
named in a 0600 `--mcp-config` file as server `roost`, so Claude Code calls
`mcp__roost__<name>` and `--allowedTools` lists exactly those. Each call runs
through `ModelRequest.call_tool`, the agent loop's own tool path, so it is
masked, audited, shown and stored like any tool call. Claude Code runs the
tools itself, so this backend yields text and one `Finish`, never a
`ToolCall`. Without a tool server or `call_tool` (a summary, a judge) no tool
is offered. Lines of `--output-format stream-json` are read as they come.

`timeout_s` is an inactivity timeout: when the CLI writes nothing for that
long, its whole process group (the CLI and anything it started) is killed.
The group is killed too when the turn ends early and after every run, so
nothing outlives a turn; the tool endpoint closes after it. The CLI's
environment drops roost's own secrets (`ROOST_*` tokens, keys, external MCP
servers' settings, whole sections given as JSON) and `CREDENTIALS_DIRECTORY`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import tempfile
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing
from pathlib import Path

from bridge.llm.claude_relay import ToolRelay
from bridge.llm.claude_stream import (
    LineReader,
    allowed_tools,
    cli_args,
    cli_failure,
    mcp_config,
    tools_note,
    transcript,
)
from bridge.llm.faults import ServerFault, reported
from bridge.types.backend import (
    BackendError,
    ModelEvent,
    ModelRequest,
    ToolEndpoint,
    ToolServer,
)

log = logging.getLogger(__name__)

LINE_LIMIT = 16 * 1024 * 1024  # one stream-json line may carry a whole long message
STDERR_KEEP = 8192
REAP_S = 5.0
SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASS", "HMAC", "AUTH", "CREDENTIAL", "__MCP")


def _secret(name: str, value: str) -> bool:
    """A roost setting that is or may hold a secret (a whole section as JSON may)."""
    if not name.startswith("ROOST_"):
        return False
    return any(w in name.upper() for w in SECRET_WORDS) or value.lstrip().startswith("{")


def child_env(base: Mapping[str, str]) -> dict[str, str]:
    """The CLI's environment: without roost's secrets and credentials (it needs none)."""
    return {k: v for k, v in base.items() if not _secret(k, v) and k != "CREDENTIALS_DIRECTORY"}


class ClaudeCliBackend:
    """Claude Code as a model backend; one subprocess per model call."""

    name = "claude_cli"

    def __init__(
        self,
        *,
        model: str = "",
        claude_path: str = "claude",
        timeout_s: float = 120,
        tool_server: ToolServer | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self._model = model
        self._claude = claude_path
        self._timeout_s = timeout_s
        self._tool_server = tool_server
        self._env = child_env(os.environ if env is None else env)
        self._running: set[asyncio.subprocess.Process] = set()

    def describe(self) -> str:
        return f"claude_cli model={self._model or 'default'}"

    async def aclose(self) -> None:
        for proc in list(self._running):
            _kill_group(proc)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        try:
            async with aclosing(self._run(request)) as events:
                async for event in events:
                    yield event
        except BackendError as exc:
            raise reported(exc, "", lambda text: text) from exc

    @contextlib.asynccontextmanager
    async def _tools(
        self, request: ModelRequest, relay: ToolRelay
    ) -> AsyncIterator[ToolEndpoint | None]:
        """This call's tool endpoint, open for the call; None when no tool is offered."""
        if self._tool_server is None or request.call_tool is None or not request.tools:
            yield None
            return
        async with self._tool_server(request.tools, relay) as endpoint:
            yield endpoint

    async def _start(self, args: list[str], cwd: Path) -> asyncio.subprocess.Process:
        pipe = asyncio.subprocess.PIPE
        try:
            return await asyncio.create_subprocess_exec(
                *args,
                stdin=pipe,
                stdout=pipe,
                stderr=pipe,
                cwd=cwd,
                env=self._env,
                start_new_session=True,  # its own process group: killed as a whole
                limit=LINE_LIMIT,
            )
        except FileNotFoundError as exc:
            raise ServerFault(
                "config",
                "the Claude Code CLI is not installed on the server; the operator should "
                "install it or set ROOST_LLM__CLAUDE_PATH to the `claude` executable",
                f"{self._claude!r} not found: {exc}",
            ) from exc
        except PermissionError as exc:
            raise ServerFault(
                "config",
                "the Claude Code CLI cannot be run (not executable); the operator should "
                "check ROOST_LLM__CLAUDE_PATH",
                f"{self._claude!r}: {exc}",
            ) from exc

    async def _run(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        relay = ToolRelay()
        with tempfile.TemporaryDirectory(prefix="roost-claude-") as tmp:
            async with self._tools(request, relay) as endpoint:
                run = self._call(request, Path(tmp), endpoint, relay)
                async with aclosing(run) as events:
                    async for event in events:
                        yield event

    async def _call(
        self, request: ModelRequest, tmp: Path, endpoint: ToolEndpoint | None, relay: ToolRelay
    ) -> AsyncGenerator[ModelEvent, None]:
        """One CLI run; its process group is dead when this ends (before the endpoint)."""
        config, allowed, system_text = None, [], request.system
        if endpoint is not None:
            config = _private_file(tmp / "mcp.json", mcp_config(endpoint))
            allowed = allowed_tools(request.tools)
            system_text = request.system + tools_note(request.tools)
        system = _private_file(tmp / "system.md", system_text)
        args = cli_args(self._claude, self._model, system, config, allowed)
        proc = await self._start(args, tmp)
        self._running.add(proc)
        feeder = asyncio.create_task(_feed(proc, transcript(request.messages)))
        errors = asyncio.create_task(_tail(proc.stderr))
        reader = LineReader()
        try:
            async with aclosing(self._lines(proc, reader, relay, request)) as events:
                async for event in events:
                    yield event
            code = await _wait(proc, self._timeout_s)
            if reader.result is None:
                raise cli_failure(code, await _stderr(errors))
            for event in reader.finish():
                yield event
        finally:
            _kill_group(proc)
            relay.cancel_waiting()
            self._running.discard(proc)
            for task in (feeder, errors):
                task.cancel()
            await asyncio.gather(feeder, errors, return_exceptions=True)
            await _reap(proc)

    async def _lines(
        self,
        proc: asyncio.subprocess.Process,
        reader: LineReader,
        relay: ToolRelay,
        request: ModelRequest,
    ) -> AsyncGenerator[ModelEvent, None]:
        """The CLI's output as events; the tools it calls meanwhile run here (the turn's task)."""
        stdout = proc.stdout
        assert stdout is not None
        started = False
        read: asyncio.Future[bytes] | None = None
        try:
            while True:
                read = read or asyncio.ensure_future(stdout.readline())
                line = await self._line(relay, read, request, started)
                read = None
                if not line:
                    return
                for event in reader.feed(line):
                    started = True
                    yield event
        finally:
            if read is not None:
                read.cancel()

    async def _line(
        self, relay: ToolRelay, read: asyncio.Future[bytes], request: ModelRequest, started: bool
    ) -> bytes:
        try:
            return await relay.next_line(read, self._timeout_s, request.call_tool)
        except TimeoutError as exc:
            where = "mid-answer" if started else "before answering"
            text = f"Claude Code sent nothing for {self._timeout_s:g}s {where} and was stopped"
            raise ServerFault("timeout", text, text) from exc
        except ValueError as exc:  # a line over LINE_LIMIT
            text = "Claude Code sent an unreadable answer"
            raise ServerFault("bad_response", text, str(exc)) from exc


async def _stderr(errors: asyncio.Task[str]) -> str:
    """What the CLI wrote to stderr (a grandchild holding the pipe open is not waited for)."""
    try:
        return await asyncio.wait_for(asyncio.shield(errors), 2.0)
    except TimeoutError:
        return ""


async def _feed(proc: asyncio.subprocess.Process, text: str) -> None:
    """Write the conversation to stdin and close it (a CLI that quit early is fine)."""
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        proc.stdin.write(text.encode("utf-8"))
        await proc.stdin.drain()
        proc.stdin.close()


async def _tail(stream: asyncio.StreamReader | None) -> str:
    """Read stderr to its end (so the pipe never fills), keeping the last bytes."""
    kept = b""
    while stream is not None:
        chunk = await stream.read(65536)
        if not chunk:
            break
        kept = (kept + chunk)[-STDERR_KEEP:]
    return kept.decode("utf-8", "replace")


async def _wait(proc: asyncio.subprocess.Process, grace_s: float) -> int | None:
    """The exit status once stdout closed; None if it lingers (it is killed after)."""
    try:
        return await asyncio.wait_for(proc.wait(), min(grace_s, 10.0))
    except TimeoutError:
        return None


def _private_file(path: Path, text: str) -> str | None:
    """Write `text` readable by this user only; None (no file) for an empty text."""
    if not text:
        return None
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    return str(path)


async def _reap(proc: asyncio.subprocess.Process) -> None:
    """Wait for the killed CLI; bounded, as a process that left the group may hold a pipe."""
    try:
        await asyncio.wait_for(proc.wait(), REAP_S)
    except TimeoutError:
        log.warning("claude: a process outside the CLI's group still holds its output pipes")


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL the CLI's process group: the CLI, its MCP server, their children."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
