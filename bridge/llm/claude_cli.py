"""The `claude_cli` backend: one `claude -p` subprocess per model call.

The CLI (Claude Code, logged in on the server) runs in its own process group
in an empty temporary directory, with the assembled system prompt appended
(`--append-system-prompt-file`, a 0600 file there, never an argument anyone
can read in /proc), the conversation on stdin, and an MCP config naming
roost's MCP server for this tenant (`python -m bridge.cli.main mcp
--tenant T`), so the person's `me.*` tools are called as
`mcp__forge__me__<name>` and run in roost's sandbox. Claude Code runs those
tools itself, so this backend yields text and one `Finish`, never a
`ToolCall`. Lines of `--output-format stream-json` are read as they come.

`timeout_s` is an inactivity timeout: when the CLI writes nothing for that
long, its whole process group (the CLI, the MCP server, anything they
started) is killed. The group is killed too when the turn ends early and
after every run, so nothing outlives a turn. The CLI's environment drops
roost's own secrets (`ROOST_*` tokens, keys, external MCP servers' settings,
whole sections given as JSON) and `CREDENTIALS_DIRECTORY`. The MCP config
hands `roost mcp` its non-secret `ROOST_*` settings, the home, and the two
paths it needs to key the audit chain as the daemon does
(`ROOST_AUDIT_HMAC_KEY_FILE`, `CREDENTIALS_DIRECTORY`): paths, never a value.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import tempfile
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from pathlib import Path

from bridge.llm.claude_stream import (
    LineReader,
    allowed_tools,
    cli_args,
    cli_failure,
    mcp_config,
    transcript,
)
from bridge.llm.faults import ServerFault, reported
from bridge.types.backend import BackendError, ModelEvent, ModelRequest

log = logging.getLogger(__name__)

LINE_LIMIT = 16 * 1024 * 1024  # one stream-json line may carry a whole long message
STDERR_KEEP = 8192
REAP_S = 5.0
SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASS", "HMAC", "AUTH", "CREDENTIAL", "__MCP")
MCP_PATHS = ("ROOST_AUDIT_HMAC_KEY_FILE", "CREDENTIALS_DIRECTORY")  # where the chain's key is


def roost_mcp_command(tenant: str) -> list[str]:
    """roost's own MCP server for one tenant (`roost mcp --tenant T`)."""
    return [sys.executable, "-m", "bridge.cli.main", "mcp", "--tenant", tenant]


def _secret(name: str, value: str) -> bool:
    """A roost setting that is or may hold a secret (a whole section as JSON may)."""
    if not name.startswith("ROOST_"):
        return False
    return any(w in name.upper() for w in SECRET_WORDS) or value.lstrip().startswith("{")


def child_env(base: Mapping[str, str]) -> dict[str, str]:
    """The CLI's environment: without roost's secrets and credentials (it needs none)."""
    return {k: v for k, v in base.items() if not _secret(k, v) and k != "CREDENTIALS_DIRECTORY"}


def mcp_env(base: Mapping[str, str], home: str | None) -> dict[str, str]:
    """What `roost mcp` is given: roost's non-secret settings, the home, and the paths
    to the audit chain's key; never a token or key itself."""
    env = {k: v for k, v in base.items() if k.startswith("ROOST_") and not _secret(k, v)}
    env.update({k: base[k] for k in MCP_PATHS if k in base})
    if home:
        env["ROOST_HOME"] = home
    return env


class ClaudeCliBackend:
    """Claude Code as a model backend; one subprocess per model call."""

    name = "claude_cli"

    def __init__(
        self,
        *,
        model: str = "",
        claude_path: str = "claude",
        timeout_s: float = 120,
        roost_home: str | None = None,
        mcp_command: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self._model = model
        self._claude = claude_path
        self._timeout_s = timeout_s
        self._mcp_command = list(mcp_command) if mcp_command else None
        base = os.environ if env is None else env
        self._env = child_env(base)
        self._mcp_env = mcp_env(base, roost_home)
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

    def _config(self, tmp: Path, tenant: str) -> str | None:
        if not tenant:
            return None
        command = self._mcp_command or roost_mcp_command(tenant)
        return _private_file(tmp / "mcp.json", mcp_config(command, self._mcp_env))

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
        with tempfile.TemporaryDirectory(prefix="roost-claude-") as tmp:
            config = self._config(Path(tmp), request.tenant)
            allowed = allowed_tools(request.tools) if config else []
            system = _private_file(Path(tmp) / "system.md", request.system)
            args = cli_args(self._claude, self._model, system, config, allowed)
            proc = await self._start(args, Path(tmp))
            self._running.add(proc)
            feeder = asyncio.create_task(_feed(proc, transcript(request.messages)))
            errors = asyncio.create_task(_tail(proc.stderr))
            reader = LineReader()
            try:
                async with aclosing(self._lines(proc, reader)) as events:
                    async for event in events:
                        yield event
                code = await _wait(proc, self._timeout_s)
                if reader.result is None:
                    raise cli_failure(code, await _stderr(errors))
                for event in reader.finish():
                    yield event
            finally:
                _kill_group(proc)
                self._running.discard(proc)
                for task in (feeder, errors):
                    task.cancel()
                await asyncio.gather(feeder, errors, return_exceptions=True)
                await _reap(proc)

    async def _lines(
        self, proc: asyncio.subprocess.Process, reader: LineReader
    ) -> AsyncGenerator[ModelEvent, None]:
        assert proc.stdout is not None
        started = False
        while True:
            try:
                async with asyncio.timeout(self._timeout_s):
                    line = await proc.stdout.readline()
            except TimeoutError as exc:
                where = "mid-answer" if started else "before answering"
                text = f"Claude Code sent nothing for {self._timeout_s:g}s {where} and was stopped"
                raise ServerFault("timeout", text, text) from exc
            except ValueError as exc:  # a line over LINE_LIMIT
                text = "Claude Code sent an unreadable answer"
                raise ServerFault("bad_response", text, str(exc)) from exc
            if not line:
                return
            for event in reader.feed(line):
                started = True
                yield event


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
