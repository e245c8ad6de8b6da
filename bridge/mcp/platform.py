"""`roost mcp`'s declaration (`PLATFORM`, channel `mcp`): a tool call from an MCP client.

Not a chat: it only names the channel of the audit records a call through
`roost mcp` causes. See `bridge.types.platform`.
"""

from __future__ import annotations

import re

from bridge.types.platform import Platform

PLATFORM = Platform(
    name="mcp",
    title="MCP",
    style="The answer is read by a program through MCP: plain text.",
    identity=re.compile(r"mcp"),
)
