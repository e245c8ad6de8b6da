"""The model backend interface and the types that cross it.

The core talks to every model server through `Backend.stream`, which yields
`TextDelta` and `ToolCall` events and ends with one `Finish` (before a retry
an HTTP backend yields `Retrying`, which only progress displays look at). Failures are
raised as `BackendError` with a short message meant for the person. Backends
live in `bridge/llm/`; this module imports nothing from the project.

A backend whose model runs tools itself (Claude Code, `claude_cli`) never
yields `ToolCall`: it runs the request's tools through `ModelRequest.call_tool`
(the agent loop's own tool path: same checks, masking, audit, progress and
stored steps), served to its model by a `ToolServer` for the length of the
call (roost's MCP endpoint of this turn, `ToolEndpoint`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """A tool call the model asked for; `arguments` is the raw JSON text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image sent with a user message (already downscaled and re-encoded)."""

    mime: str  # image/jpeg | image/png | image/webp | image/gif
    data: bytes


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of the conversation in OpenAI chat-completions shape.

    `images` go with a user message to a backend that can see them; they are
    never stored in the session (the history keeps a placeholder)."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCallRequest, ...] = ()
    tool_call_id: str = ""
    name: str = ""
    images: tuple[ImagePart, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolSchema:
    """A tool as offered to the model: a wire-safe name and a JSON schema."""

    name: str  # ^[a-zA-Z0-9_-]{1,64}$
    description: str
    parameters: Mapping[str, Any]


# (tool name, arguments as JSON text) -> the result the model reads ("error: ..." when it
# failed); runs one of the request's tools as the agent loop runs a ToolCall
ToolCaller = Callable[[str, str], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class ToolEndpoint:
    """Where a model that runs tools itself reaches this call's tools: an MCP endpoint
    (streamable HTTP on loopback) that wants `Authorization: Bearer <token>`."""

    url: str
    token: str


# serves `tools` through `call` for as long as the context is open
ToolServer = Callable[[Sequence[ToolSchema], ToolCaller], AbstractAsyncContextManager[ToolEndpoint]]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One model step. `system[:stable_chars]` is byte-stable across this
    tenant's turns (a provider may mark it as a cache prefix); `tenant` names
    whose turn this is; `call_tool` runs one of `tools` (for a backend whose
    model runs tools itself; None outside a turn's agent loop)."""

    system: str
    messages: Sequence[ChatMessage]
    tools: Sequence[ToolSchema] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    tenant: str = ""
    stable_chars: int = 0
    call_tool: ToolCaller | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    call: ToolCallRequest


@dataclass(frozen=True, slots=True)
class Finish:
    reason: str  # "stop" | "tool_calls" | "length" | ...
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # of prompt_tokens, read from the provider's prompt cache


@dataclass(frozen=True, slots=True)
class Retrying:
    """The backend waits before another attempt (`attempt` of `max`); `reason` is
    safe to show the person ("the model server is busy (HTTP 429)"). Only progress:
    a consumer that does not show progress ignores it."""

    attempt: int
    max: int
    reason: str


ModelEvent = TextDelta | ToolCall | Finish | Retrying


class BackendError(Exception):
    """A model call failed; `user_message` is safe to show the person.

    `kind` is one of: auth, not_found, rate_limited, unavailable, timeout,
    bad_response, config.
    """

    def __init__(self, kind: str, user_message: str) -> None:
        super().__init__(f"{kind}: {user_message}")
        self.kind = kind
        self.user_message = user_message


class Backend(Protocol):
    """A model server. One instance serves every chat concurrently."""

    name: str  # "openai" | "offline" | ...

    def describe(self) -> str:
        """One line for /status: provider and model (never a server address)."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Yield the answer as events; raise BackendError on failure."""
        ...

    async def aclose(self) -> None: ...


OFFLINE = "offline"  # the name of the backend that stands for "no model configured"


def offline(backend: Backend) -> bool:
    """The offline backend (`bridge.llm.offline`): no model answers, only its setup help."""
    return backend.name == OFFLINE
