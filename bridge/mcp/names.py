"""Wire names of external MCP tools: `mcp__<server>__<tool>`, safe for every model API.

Model APIs accept `^[a-zA-Z0-9_-]{1,64}$`. A tool whose name already fits
keeps it (`mcp__github__list_issues`); any other (a `.` or a space in it, or
too long) has the other characters replaced by `_`, is cut to fit, and ends
with `_` + 8 hex of its name's sha256, so two tools of one server never share
a wire name. `allowed` applies the operator's per-server allow-list.
"""

from __future__ import annotations

import hashlib
import re

PREFIX = "mcp__"
MAX_WIRE = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_SAFE = re.compile(r"[A-Za-z0-9_-]+")


def wire_name(server: str, tool: str) -> str:
    head = f"{PREFIX}{server}__"
    plain = head + tool
    if _SAFE.fullmatch(tool) and len(plain) <= MAX_WIRE:
        return plain
    tag = "_" + hashlib.sha256(tool.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    body = _UNSAFE.sub("_", tool)[: MAX_WIRE - len(head) - len(tag)]
    return head + body + tag


def allowed(allow: list[str], tool: str) -> bool:
    """Whether the operator's allow-list lets the model call `tool` (empty: none, `*`: all)."""
    return "*" in allow or tool in allow
