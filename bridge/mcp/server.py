"""roost's MCP server for one tenant: its saved `me.*` tools over the official SDK.

`tools/list` offers the tenant's saved tools under their wire names
`me__<name>` (`forge.names`; MCP clients that feed a model API, Claude Desktop
and Claude Code among them, refuse a `.` in a tool name, so Claude Code shows
`mcp__<server>__me__<name>`), with `title` `me.<name>` and the JSON schema
saved with the tool. `tools/call` runs the very tool object a chat turn gets
from the personal-tools `ToolSource` (lint, hash check, sandbox, declared
vault secrets only, usage counted, one `tool.called` event with channel
`mcp`); its output is masked by the tenant's vault masker and cut at the
agent loop's limit, and a failure is an MCP tool error (`isError`) whose text
says what went wrong.

`ToolsFeed` tells connected clients that the list changed: handshake-era
clients (2024-11-05 .. 2025-11-25) get `notifications/tools/list_changed` on
their connection, 2026-07-28 clients on their `subscriptions/listen` stream.
"""

from __future__ import annotations

import collections
import json
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged

from bridge.core.agent import MAX_TOOL_RESULT_CHARS
from bridge.mcp.conns import CallSlots
from bridge.types.masked import Masked, masked_strings
from bridge.types.messages import Inbound
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import Tool, ToolError, ToolSource, TurnContext
from forge.names import WIRE_PREFIX

log = logging.getLogger("roost.mcp")

CHANNEL = "mcp"
MAX_LEGACY_CLIENTS = 256  # handshake-era connections remembered for list_changed


@dataclass(frozen=True)
class TenantTools:
    """What the server needs of a roost: one tenant, its tool source and its masker."""

    dirs: TenantDirs
    source: ToolSource  # the personal-tools source chat turns use
    mask: Callable[[TenantDirs], Callable[[str], Masked]]  # the vault masker of a tenant
    clock: Callable[[], float] = time.time

    def turn(self) -> TurnContext:
        inbound = Inbound(CHANNEL, CHANNEL, CHANNEL, "", uuid.uuid4().hex)
        return TurnContext(self.dirs, inbound, self.clock)

    def saved(self, turn: TurnContext) -> dict[str, Tool]:
        """The tenant's saved tools by wire name (drafts and forge_create are chat-only)."""
        tools = self.source.tools_for(turn)
        return {t.schema.name: t for t in tools if t.schema.name.startswith(WIRE_PREFIX)}

    def fingerprint(self) -> str:
        """Changes exactly when what `tools/list` shows changes."""
        rows = sorted(
            (name, t.schema.description, t.schema.parameters)
            for name, t in self.saved(self.turn()).items()
        )
        return json.dumps(rows, sort_keys=True, default=str)


class ToolsFeed:
    """Tells every connected client that the tool list changed, in its protocol era."""

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self._legacy: collections.deque[ServerSession] = collections.deque(
            maxlen=MAX_LEGACY_CLIENTS
        )

    async def middleware(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Remember each handshake-era connection once, when it says it is initialized."""
        result = await call_next(ctx)
        if ctx.request_id is None and ctx.method == "notifications/initialized":
            self._legacy.append(ctx.session)
        return result

    async def changed(self) -> None:
        await self.bus.publish(ToolsListChanged())
        for session in tuple(self._legacy):
            await session.send_tool_list_changed()  # best effort: a closed one drops it


def _text(text: Masked, error: bool = False) -> types.CallToolResult:
    """A result leaves only masked (`bridge.types.masked`): the masker is its one way out."""
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


def _cut(text: str) -> str:
    if len(text) <= MAX_TOOL_RESULT_CHARS:
        return text
    more = len(text) - MAX_TOOL_RESULT_CHARS
    return text[:MAX_TOOL_RESULT_CHARS] + f"\n[cut: {more:,} more characters]"


def listing(tools: Sequence[Tool], mask: Callable[[str], str]) -> list[types.Tool]:
    """The saved tools as MCP lists them: descriptions and schemas through the tenant's
    masker (a value put in the vault after a tool was saved is masked here too)."""
    return [
        types.Tool(
            name=t.schema.name,
            title="me." + t.schema.name[len(WIRE_PREFIX) :],
            description=mask(t.schema.description),
            input_schema=masked_strings(dict(t.schema.parameters), mask) or {"type": "object"},
        )
        for t in tools
    ]


async def call_tool(tenant: TenantTools, name: str, args: dict[str, Any]) -> types.CallToolResult:
    """One `tools/call`, as a chat turn would run it; every text leaves masked."""
    turn = tenant.turn()
    mask = tenant.mask(tenant.dirs)
    tools = tenant.saved(turn)
    tool = tools.get(name)
    if tool is None:
        known = ", ".join(sorted(tools)) or "none"
        return _text(mask(f"there is no saved tool named {name!r}; available: {known}"), True)
    try:
        output = await tool(args, turn)
    except ToolError as exc:
        return _text(mask(_cut(mask(str(exc)))), error=True)
    except Exception as exc:  # a bug in roost must not end the connection
        log.error("MCP call of %s failed inside roost: %s", name, mask(repr(exc)))
        failed = f"the tool {name} failed inside roost; the operator's log has details"
        return _text(mask(failed), True)
    return _text(mask(_cut(mask(output))))  # masked before the cut, and what is left after


def build_server(
    tenant: TenantTools, feed: ToolsFeed, version: str = "", calls: CallSlots | None = None
) -> Server[Any]:
    """The SDK server over `tenant`'s saved tools, announcing changes through `feed`;
    with `calls`, no more tool calls run at once than it allows (a call past it is a
    tool error saying so)."""

    async def on_list(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        saved = list(tenant.saved(tenant.turn()).values())
        return types.ListToolsResult(tools=listing(saved, tenant.mask(tenant.dirs)))

    async def on_call(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if calls is None:
            return await call_tool(tenant, params.name, dict(params.arguments or {}))
        if not calls.start():
            busy = f"too many tool calls in flight ({calls.per_token} at most); try again soon"
            return _text(tenant.mask(tenant.dirs)(busy), True)
        try:
            return await call_tool(tenant, params.name, dict(params.arguments or {}))
        finally:
            calls.end()

    server: Server[Any] = Server(
        "roost",
        version=version,
        title=f"roost personal tools of {tenant.dirs.tenant}",
        instructions=(
            f"The saved personal tools (me.*) of {tenant.dirs.tenant}; each runs in roost's "
            "sandbox. A failing tool answers with an error text that says why."
        ),
        on_list_tools=on_list,
        on_call_tool=on_call,
        on_subscriptions_listen=ListenHandler(feed.bus),
    )
    server.middleware.append(feed.middleware)
    return server


def init_options(server: Server[Any]) -> InitializationOptions:
    return server.create_initialization_options(NotificationOptions(tools_changed=True))
