"""The agent loop: ask the model, run the tools it calls, repeat.

Given a system prompt, the conversation and the tools of this turn, it
streams text out through `on_delta`, runs tool calls (a failing tool becomes
a tool result the model can read, never a crash) and stops at a final answer
or at the step limit. It knows nothing about channels, tenants or storage.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from bridge.backend import (
    Backend,
    ChatMessage,
    Finish,
    ModelRequest,
    TextDelta,
    ToolCall,
    ToolCallRequest,
)
from bridge.tools import Tool, ToolError, TurnContext

log = logging.getLogger(__name__)

DeltaSink = Callable[[str], Awaitable[None]]
MAX_TOOL_RESULT_CHARS = 16_000


@dataclass(slots=True)
class ToolRun:
    name: str
    ok: bool
    ms: int


@dataclass(slots=True)
class AgentResult:
    text: str
    steps: int
    tool_runs: list[ToolRun] = field(default_factory=list)
    stopped_at_limit: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0


async def run_agent(
    backend: Backend,
    system: str,
    messages: Sequence[ChatMessage],
    tools: Sequence[Tool],
    turn: TurnContext,
    max_steps: int,
    on_delta: DeltaSink | None = None,
) -> AgentResult:
    """Run model steps until a final answer; BackendError propagates."""
    by_name: Mapping[str, Tool] = {t.schema.name: t for t in tools}
    schemas = [t.schema for t in tools]
    convo = list(messages)
    result = AgentResult(text="", steps=0)
    pieces: list[str] = []
    for step in range(1, max_steps + 1):
        result.steps = step
        step_text: list[str] = []
        calls: list[ToolCallRequest] = []
        async for event in backend.stream(ModelRequest(system, tuple(convo), tuple(schemas))):
            if isinstance(event, TextDelta):
                if not step_text and pieces and on_delta is not None:
                    await on_delta("\n\n")
                step_text.append(event.text)
                if on_delta is not None:
                    await on_delta(event.text)
            elif isinstance(event, ToolCall):
                calls.append(event.call)
            elif isinstance(event, Finish):
                result.prompt_tokens += event.prompt_tokens
                result.completion_tokens += event.completion_tokens
        text = "".join(step_text)
        if text:
            pieces.append(text)
        if not calls:
            break
        convo.append(ChatMessage(role="assistant", content=text, tool_calls=tuple(calls)))
        for call in calls:
            output, run = await _run_tool(by_name, call, turn)
            result.tool_runs.append(run)
            convo.append(ChatMessage(role="tool", content=output, tool_call_id=call.id))
    else:
        result.stopped_at_limit = True
        note = f"(I stopped after {max_steps} tool steps without a final answer.)"
        if on_delta is not None:
            await on_delta(("\n\n" if pieces else "") + note)
        pieces.append(note)
    result.text = "\n\n".join(pieces)
    return result


async def _run_tool(
    by_name: Mapping[str, Tool], call: ToolCallRequest, turn: TurnContext
) -> tuple[str, ToolRun]:
    started = time.perf_counter()
    tool = by_name.get(call.name)
    ok = False
    if tool is None:
        known = ", ".join(sorted(by_name)) or "none"
        output = f"error: there is no tool named {call.name!r}; available tools: {known}"
    else:
        try:
            args = json.loads(call.arguments or "{}")
            if not isinstance(args, dict):
                raise ValueError("arguments must be a JSON object")
        except ValueError as exc:
            output = f"error: the arguments are not a JSON object ({exc}); send valid JSON"
        else:
            try:
                output = await tool(args, turn)
                ok = True
            except ToolError as exc:
                output = f"error: {exc}"
            except Exception:
                log.exception("tool %s failed", call.name)
                output = f"error: the tool {call.name} failed inside roost; do not retry it now"
    if len(output) > MAX_TOOL_RESULT_CHARS:
        cut = len(output) - MAX_TOOL_RESULT_CHARS
        output = output[:MAX_TOOL_RESULT_CHARS] + f"\n[cut: {cut:,} more characters]"
    ms = int((time.perf_counter() - started) * 1000)
    return output, ToolRun(call.name, ok, ms)
