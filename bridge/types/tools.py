"""The interface model-callable tools plug in through.

A `ToolSource` offers tools for one turn (memory tools, forge_create, the
tenant's `me.*` tools); the agent loop asks every source once per turn and
never knows what a tool does. A tool returns text for the model; a
`ToolError` becomes a tool result the model can act on, never a crash.
A tool that has something the person must see (not only the model) adds a
short line to `TurnContext.notices`; the turn ends its reply with them.
A tool whose screen refused to keep a text because it holds a secret adds
the text to `TurnContext.refused`: the turn masks those secrets wherever it
stores the turn (`bridge.core.turn`). A source whose offer depends on stored
rows (the forge's drafts) is also a `PreparedSource`: the turn awaits its
`prepare(turn)` once before the first step, so `tools_for` stays a plain read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from bridge.types.backend import ToolSchema
from bridge.types.messages import Action, Inbound
from bridge.types.tenant_dirs import TenantDirs


class ToolError(Exception):
    """A tool refused or failed in a way the model should hear about."""


@dataclass(frozen=True, slots=True)
class TurnContext:
    """What a tool may know about the turn that called it."""

    dirs: TenantDirs  # the tenant's directories (id and every path)
    inbound: Inbound
    now: Callable[[], float]  # injected clock, seconds since the epoch
    notices: list[str] = field(default_factory=list)  # lines for the person, after the reply
    actions: list[Action] = field(default_factory=list)  # one-tap replies offered with it
    refused: list[str] = field(default_factory=list)  # texts a screen refused (secrets)

    @property
    def tenant(self) -> str:
        return self.dirs.tenant


class Tool(Protocol):
    @property
    def schema(self) -> ToolSchema: ...

    async def __call__(self, args: Mapping[str, Any], turn: TurnContext) -> str: ...


class ToolSource(Protocol):
    def tools_for(self, turn: TurnContext) -> Sequence[Tool]: ...


@runtime_checkable
class PreparedSource(Protocol):
    """A `ToolSource` that reads what it offers from storage before a turn's steps."""

    async def prepare(self, turn: TurnContext) -> None: ...


@dataclass(frozen=True, slots=True)
class FunctionTool:
    """A tool made of a schema and an async function."""

    schema: ToolSchema
    fn: Callable[[Mapping[str, Any], TurnContext], Awaitable[str]]

    async def __call__(self, args: Mapping[str, Any], turn: TurnContext) -> str:
        reply: str = await self.fn(args, turn)
        return reply
