"""One model call's tools as an MCP endpoint: what Claude Code (`claude_cli`) calls.

`serve_turn_tools(tools, call)` is a `ToolServer` (bridge.types.backend): for
as long as the context is open it serves exactly `tools` (the turn's own:
memory, forge_create and drafts, skills, schedule, recall, the tenant's
`me.*` tools and its attached MCP servers' tools, under the names the turn
offers them) over streamable HTTP on 127.0.0.1, on a port the kernel picks,
behind a bearer token made for this call alone. `tools/call` goes through
`call` (the agent loop's `ModelRequest.call_tool`), so a tool runs with the
turn's context (tenant, chat, message), masking, audit, progress cards and
stored steps, whoever drives the loop. A result that starts "error:" is an
MCP tool error. Closing the context stops the server: the token dies with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Sequence
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from bridge.mcp.http import BearerGate, bind, serve_http, url_of
from bridge.types.backend import ToolCaller, ToolEndpoint, ToolSchema

SERVER = "roost"


def listing(tools: Sequence[ToolSchema]) -> list[types.Tool]:
    return [
        types.Tool(
            name=t.name,
            description=t.description,
            input_schema=dict(t.parameters) or {"type": "object"},
        )
        for t in tools
    ]


def build_turn_server(tools: Sequence[ToolSchema], call: ToolCaller) -> Server[Any]:
    """The SDK server over one call's tools; every call goes through `call`."""
    import json

    offered = listing(tools)

    async def on_list(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=offered)

    async def on_call(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        output = await call(params.name, json.dumps(params.arguments or {}))
        text = types.TextContent(text=output)
        return types.CallToolResult(content=[text], is_error=output.startswith("error:"))

    return Server(
        SERVER,
        title="roost: this turn's tools",
        instructions="The tools of this turn of roost; each answers with text.",
        on_list_tools=on_list,
        on_call_tool=on_call,
    )


@contextlib.asynccontextmanager
async def serve_turn_tools(
    tools: Sequence[ToolSchema], call: ToolCaller
) -> AsyncIterator[ToolEndpoint]:
    """Serve `tools` on loopback until the context closes; yields where, and the token."""
    token = secrets.token_urlsafe(32)
    app = build_turn_server(tools, call).streamable_http_app(host="127.0.0.1")
    sock = bind("127.0.0.1", 0)  # listening now: a client's connect waits in the backlog
    stop = asyncio.Event()
    task = asyncio.create_task(serve_http(BearerGate(app, lambda: token), sock, stop))
    try:
        yield ToolEndpoint(url_of(sock), token)
    finally:
        stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        sock.close()
