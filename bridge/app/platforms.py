"""The platform registry: every chat platform's declaration, as the app reads them.

`platforms_of(rows)` is the registry of a channel table: each row's
`Platform` (`bridge.types.platform`) plus the channels that run without a
row (the terminal of `roost chat`, `roost mcp`). `bridge.app.channels_up`
keeps the registry of its table as `PLATFORMS`; the composition root hands
it to what reads declarations (the audit chain's schema, the config check,
the resolver, `roost send --to`, speech, the base prompt, the senses).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from bridge.channels.terminal.platform import PLATFORM as TERMINAL
from bridge.mcp.platform import PLATFORM as MCP
from bridge.types.platform import Platform, Platforms

WITHOUT_ROWS = (TERMINAL, MCP)
"""Channels that are not started by the channel table (`roost chat`, `roost mcp`)."""


class HasPlatform(Protocol):
    @property
    def platform(self) -> Platform | None: ...


def platforms_of(rows: Iterable[HasPlatform]) -> Platforms:
    """The registry of a channel table (rows without a declaration add nothing)."""
    declared = [row.platform for row in rows if row.platform is not None]
    return Platforms((*WITHOUT_ROWS, *declared))
