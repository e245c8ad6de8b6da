"""Run roost's MCP server for one tenant over stdio or streamable HTTP.

Both transports serve the same SDK server (`bridge.mcp.server`) and watch the
tenant's tools directory (`bridge.mcp.watch`) so clients hear
`tools/list_changed` when a tool is saved or removed, in this process or in
another one (the daemon, a chat). The caller builds the roost and closes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable
from typing import Any

from mcp.server.stdio import stdio_server

from bridge.mcp.conns import CallSlots, McpLimits
from bridge.mcp.eof import answered_first
from bridge.mcp.http import BearerGate, serve_http
from bridge.mcp.server import TenantTools, ToolsFeed, build_server, init_options
from bridge.mcp.watch import watch_tools


@contextlib.asynccontextmanager
async def _watching(tenant: TenantTools, feed: ToolsFeed, stop: asyncio.Event) -> Any:
    ready = asyncio.Event()
    task = asyncio.create_task(
        watch_tools(tenant.dirs.tools, tenant.fingerprint, feed.changed, stop, ready)
    )
    waiter = asyncio.create_task(ready.wait())
    done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    if task in done:
        task.result()  # the watcher could not start: say why
    try:
        yield
    finally:
        stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def run_stdio(tenant: TenantTools, version: str = "") -> None:
    """Serve until the client closes stdin, and every request it sent before is answered
    (`answered_first`)."""
    feed = ToolsFeed()
    server = build_server(tenant, feed, version)
    async with _watching(tenant, feed, asyncio.Event()), stdio_server() as (read, write):
        read, write = answered_first(read, write)
        await server.run(read, write, init_options(server))


async def run_http(
    tenant: TenantTools,
    sock: socket.socket,
    token: Callable[[], str | None],
    stop: asyncio.Event,
    remote: bool = False,
    version: str = "",
    limits: McpLimits | None = None,
) -> None:
    """Serve on `sock` until `stop` is set; every request needs the tenant's token;
    connections and tool calls in flight stay within `limits`."""
    from mcp.server.transport_security import TransportSecuritySettings

    limits = limits or McpLimits()
    calls = CallSlots(limits.calls_per_token)
    feed = ToolsFeed()
    server = build_server(tenant, feed, version, calls)
    host = "0.0.0.0" if remote else "127.0.0.1"
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False) if remote else None
    app = server.streamable_http_app(host=host, transport_security=security)
    async with _watching(tenant, feed, asyncio.Event()):
        gate = BearerGate(app, token, calls, limits.retry_after_s)
        await serve_http(gate, sock, stop, limits)
