"""One external MCP server of one tenant: a session started on first need, in its own task.

`ServerLink.ready()` starts the session (stdio: the operator's `command` with
only `env` and a few safe variables such as PATH and HOME, never roost's own
environment; HTTP: `url` with `headers`), lists the tools and returns within
`start_timeout_s` (60 s: a process that imports its SDK on a busy machine, or
`npx` fetching a package, takes longer than a call), whatever the server
does; a failure is remembered for
`RETRY_S`, so a dead server costs one timeout per minute, not one per turn.
The SDK's session lives in a task of its own (anyio scopes must be left by
the task that entered them) until `aclose()`; calls are made from the turn's
task and bounded by `timeout_s` (20 s). A server's stderr goes to
`$ROOST_HOME/mcp/<tenant>.<server>.log` (0600), not to roost's log. A link a
reload replaced or removed is `retired` (`bridge.mcp.holds`): it is never
started again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import ssl
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from bridge.core.config_sections import McpServerSettings

if TYPE_CHECKING:  # the SDK's types are imported when a server is used
    import mcp_types as types

log = logging.getLogger("roost.mcp")

RETRY_S = 60.0
MAX_PAGES = 20


class LinkError(Exception):
    """The server cannot be used now; the message is safe to show the model."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind  # the audit's error_kind: start | timeout | protocol


class ServerLink:
    def __init__(self, tenant: str, name: str, settings: McpServerSettings, log_dir: Path) -> None:
        self.tenant, self.name, self.settings = tenant, name, settings
        self._log_dir = log_dir
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._stop = asyncio.Event()
        self._client: Any = None
        self._failed_at: float | None = None
        self.failure = ""
        self.tools: list[types.Tool] = []
        self.stale = False  # the server said its list changed
        self.users = 0  # running turns that hold this link (bridge.mcp.holds)
        self.busy = 0  # calls running on it
        self.retired = False  # a reload replaced or removed it

    async def ready(self) -> None:
        """Start (or restart) the session if needed; raise LinkError if it is not usable."""
        if self._client is not None and not self.stale:
            return
        if self._client is not None:
            await self._relist()
            return
        if self.retired:
            raise LinkError(
                "start", f"the operator changed or removed the MCP server {self.name!r}"
            )
        if self._failed_at is not None and time.monotonic() - self._failed_at < RETRY_S:
            raise LinkError("start", self.failure)
        if self._task is None or self._task.done():
            loop = asyncio.get_running_loop()
            self._ready, self._stop = loop.create_future(), asyncio.Event()
            self._task = asyncio.create_task(self._run(self._ready), name=f"mcp:{self.name}")
        assert self._ready is not None
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), self.settings.start_timeout_s)
        except TimeoutError:
            self._fail(f"did not start within {self.settings.start_timeout_s:g} s")
            await self._end()
            raise LinkError("start", self.failure) from None
        except LinkError as exc:
            self._fail(str(exc))
            raise LinkError("start", self.failure) from None
        self._failed_at = None

    def _fail(self, why: str) -> None:
        self.failure = f"the MCP server {self.name!r} is not available ({why})"
        self._failed_at = time.monotonic()
        log.warning("MCP server %s of %s: %s", self.name, self.tenant, why)

    async def _run(self, ready: asyncio.Future[None]) -> None:
        errlog: IO[str] | None = None
        try:
            errlog = self._open_errlog() if self.settings.command else None
            async with self._connect(errlog) as client:
                self.tools = await _list_all(client)
                self._client = client
                ready.set_result(None)
                await self._stop.wait()
        except Exception as exc:  # the server's failure, whatever it is, ends this session only
            why = _describe(exc)
            if not ready.done():
                ready.set_exception(LinkError("start", why))
            else:
                log.warning("MCP server %s of %s stopped: %s", self.name, self.tenant, why)
        finally:
            self._client = None
            if errlog is not None:
                errlog.close()

    @contextlib.asynccontextmanager
    async def _connect(self, errlog: IO[str] | None) -> AsyncIterator[Any]:
        """The SDK's session with the server, open while the block runs; an HTTP server's
        client (its connections) is closed with it (the SDK leaves a client it was given
        open)."""
        from mcp.client.client import Client

        async with contextlib.AsyncExitStack() as stack:
            if self.settings.command:
                from mcp.client.stdio import StdioServerParameters, stdio_client

                argv = self.settings.command
                env = {k: v.get_secret_value() for k, v in self.settings.env.items()}
                params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
                transport: Any = stdio_client(params, errlog=errlog)  # type: ignore[arg-type]
            else:
                from mcp.client.streamable_http import streamable_http_client

                headers = {k: v.get_secret_value() for k, v in self.settings.headers.items()}
                http = await stack.enter_async_context(_http_client(headers))
                assert self.settings.url is not None
                transport = streamable_http_client(self.settings.url, http_client=http)
            yield await stack.enter_async_context(
                Client(
                    transport,
                    mode="legacy",
                    cache=None,
                    # a bound on each answer; start and calls have their own (wait_for)
                    read_timeout_seconds=max(
                        self.settings.timeout_s, self.settings.start_timeout_s
                    ),
                    message_handler=self._on_message,
                )
            )

    async def _on_message(self, message: object) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self.stale = True

    async def _relist(self) -> None:
        self.stale = False
        try:
            self.tools = await asyncio.wait_for(_list_all(self._client), self.settings.timeout_s)
        except Exception as exc:
            log.warning("MCP server %s of %s: listing failed: %s", self.name, self.tenant,
                        _describe(exc))  # fmt: skip

    def _open_errlog(self) -> IO[str]:
        self._log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = self._log_dir / f"{self.tenant}.{self.name}.log"
        return open(path, "a", encoding="utf-8", opener=_private)

    async def call(self, tool: str, args: dict[str, Any]) -> types.CallToolResult:
        """Call `tool`; raise LinkError when the server is gone or too slow."""
        await self.ready()
        client = self._client
        if client is None:
            raise LinkError("protocol", f"the MCP server {self.name!r} closed the connection")
        try:
            result = await asyncio.wait_for(client.call_tool(tool, args), self.settings.timeout_s)
        except TimeoutError:
            log.warning("MCP server %s of %s: %s timed out", self.name, self.tenant, tool)
            raise LinkError(
                "timeout", f"{self.name}/{tool} gave no answer within {self.settings.timeout_s:g} s"
            ) from None
        except Exception as exc:
            why = _describe(exc)
            log.warning("MCP server %s of %s: %s failed: %s", self.name, self.tenant, tool, why)
            raise LinkError("protocol", f"{self.name}/{tool} failed ({why})") from None
        import mcp_types

        assert isinstance(result, mcp_types.CallToolResult)
        return result

    async def _end(self) -> None:
        self._stop.set()
        task = self._task
        if task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), 10)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def aclose(self) -> None:
        await self._end()
        self._task = None


def _http_client(headers: dict[str, str]) -> Any:
    """The SDK's HTTP client for one server's session (`create_mcp_http_client`: its
    timeouts, these headers), verifying with the process's one TLS context."""
    import httpx2
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
    return httpx2.AsyncClient(headers=headers, timeout=timeout, verify=verified())


@functools.cache
def verified() -> ssl.SSLContext:
    """httpx2's default verifying context (its CA bundle, or `SSL_CERT_FILE` /
    `SSL_CERT_DIR`; hostnames checked, certificates required), made once a process:
    httpx2 reads the whole bundle for every client it makes, about 29 ms of CPU on a
    quiet 2-core machine, and each HTTP server's session has a client of its own (a
    tenant's first turn that uses it waited for that read; 0.13 ms with this one)."""
    import httpx2

    return httpx2.create_ssl_context()


def _private(path: str, flags: int) -> int:
    import os

    return os.open(path, flags, 0o600)


async def _list_all(client: Any) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _describe(exc: BaseException) -> str:
    """A short reason without the exception's own text (it may quote a URL or a header)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError):
        return "its command was not found"
    if isinstance(exc, PermissionError):
        return "its command may not be run"
    from mcp.shared.exceptions import MCPError

    if isinstance(exc, MCPError):
        return f"MCP error {exc.code}"
    return type(exc).__name__
