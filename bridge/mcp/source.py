"""External MCP servers' tools, offered to the model per tenant (a `ToolSource`).

The operator attaches servers to a tenant (`[tenants.alice.mcp.github]`);
only the tools its `allow` list names are offered, as `mcp__<server>__<tool>`
(`bridge.mcp.names`), with the server's own description and input schema.
Before each of a tenant's turns (`before_turn`, a `TurnObserver` hook) its
servers are started concurrently if they are not running, each bounded by its
`start_timeout_s`; nothing of one tenant's servers is ever offered to another. A
server that is not available still offers its explicitly allowed tools, which
answer with a tool error saying so. Every call is one `mcp.called` event
(keyed ids of server and tool, ms, ok, error_kind); never arguments or
results. The agent loop masks vault values in the result and cuts it.

`reload` applies a new `[tenants.*.mcp.*]`: unchanged servers keep their
session, new ones start lazily (at a turn), removed or changed ones are
closed once their running calls end; a turn in flight keeps the sessions it
started with (`bridge.mcp.holds`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridge.core.agent import AgentResult
from bridge.core.config_sections import McpServerSettings
from bridge.core.sessions import Session
from bridge.mcp.client import LinkError, ServerLink
from bridge.mcp.holds import Holds
from bridge.mcp.names import allowed, wire_name
from bridge.types.audit_sink import AuditSink, TurnEvents
from bridge.types.backend import ToolSchema
from bridge.types.tools import FunctionTool, Tool, ToolError, TurnContext

if TYPE_CHECKING:  # the SDK's types are imported when a server is used
    import mcp_types as types

MAX_DESCRIPTION = 1024
OPEN_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": True}


class McpTools:
    """The tools of every tenant's attached MCP servers; one per daemon."""

    def __init__(
        self,
        servers: Mapping[str, Mapping[str, McpServerSettings]],
        audit: AuditSink,
        log_dir: Path,
    ) -> None:
        self._audit = audit
        self._log_dir = log_dir
        self._holds = Holds()
        self._links: dict[str, tuple[ServerLink, ...]] = {}
        self.reload(servers)

    def reload(self, servers: Mapping[str, Mapping[str, McpServerSettings]]) -> None:
        """The servers of a new configuration: unchanged ones keep their session."""
        old = self._links
        links: dict[str, tuple[ServerLink, ...]] = {}
        for tenant, conf_map in servers.items():
            known = {link.name: link for link in old.get(tenant, ())}
            links[tenant] = tuple(
                known[name]
                if name in known and known[name].settings == conf
                else ServerLink(tenant, name, conf, self._log_dir)
                for name, conf in sorted(conf_map.items())
                if conf.allow  # an empty allow-list offers nothing: never started
            )
        self._links = links
        kept = {id(link) for group in links.values() for link in group}
        for link in (link for group in old.values() for link in group):
            if id(link) not in kept:
                self._holds.retire(link)

    async def before_turn(self, turn: TurnContext, session: Session, events: TurnEvents) -> None:
        links = self._links.get(turn.tenant, ())
        if not links:
            self._holds.release()
            return
        self._holds.take(turn.tenant, links)  # until the turn ends, whatever a reload does
        await asyncio.gather(*(_quietly(link) for link in links))

    async def after_turn(self, turn: TurnContext, result: AgentResult, events: TurnEvents) -> None:
        self._holds.release()

    def links(self, tenant: str) -> tuple[ServerLink, ...]:
        """The tenant's attached servers now (after the last reload)."""
        return self._links.get(tenant, ())

    def tools_for(self, turn: TurnContext) -> Sequence[Tool]:
        out: list[Tool] = []
        links = self._holds.held(turn.tenant)
        for link in self._links.get(turn.tenant, ()) if links is None else links:
            out.extend(self._offered(link))
        return out

    def _offered(self, link: ServerLink) -> list[Tool]:
        allow = link.settings.allow
        if link.tools:
            return [
                self._tool(link, t.name, _describe_tool(link.name, t), t.input_schema)
                for t in link.tools
                if allowed(allow, t.name)
            ]
        note = f"[MCP server {link.name}, not available now]"
        return [self._tool(link, name, note, OPEN_SCHEMA) for name in allow if name != "*"]

    def _tool(
        self, link: ServerLink, name: str, description: str, schema: Mapping[str, Any]
    ) -> Tool:
        async def call(args: Mapping[str, Any], turn: TurnContext) -> str:
            return await self._call(link, name, dict(args), turn)

        return FunctionTool(ToolSchema(wire_name(link.name, name), description, schema), call)

    async def _call(
        self, link: ServerLink, tool: str, args: dict[str, Any], turn: TurnContext
    ) -> str:
        started = time.perf_counter()
        kind = ""
        link.busy += 1
        try:
            result = await link.call(tool, args)
            text = result_text(result)
            if result.is_error:
                kind = "tool"
                raise ToolError(f"{link.name}/{tool} answered with an error: {text}")
            return text
        except LinkError as exc:
            kind = exc.kind
            raise ToolError(f"{exc}; tell the person, do not retry it in this turn") from None
        finally:
            link.busy -= 1
            self._holds.idle(link)
            details: dict[str, object] = {
                "server": link.name,
                "tool": tool,
                "ms": int((time.perf_counter() - started) * 1000),
                "ok": not kind,
            }
            if kind:
                details["error_kind"] = kind
            await self._audit.emit("mcp.called", turn.tenant, details)

    async def aclose(self) -> None:
        links = [link for group in self._links.values() for link in group]
        await asyncio.gather(*(link.aclose() for link in links), self._holds.aclose())


async def _quietly(link: ServerLink) -> None:
    with contextlib.suppress(LinkError):  # logged by the link; its tools answer with the reason
        await link.ready()


def _describe_tool(server: str, tool: types.Tool) -> str:
    text = " ".join((tool.description or tool.title or tool.name).split())
    return f"[MCP server {server}] {text[:MAX_DESCRIPTION]}"


def result_text(result: types.CallToolResult) -> str:
    """The model's view of a result: its text parts; other parts are named, not inlined."""
    import mcp_types

    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        else:
            parts.append(f"[{block.type} content not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    return "\n".join(parts) or "(no content)"
