"""The agent loop: ask the model, run the tools it calls, repeat.

Given a system prompt, the conversation and the tools of this turn, it
streams text out through `on_delta`, runs tool calls (a failing tool becomes
a tool result the model can read, never a crash) and stops at a final answer
or at the step limit. It knows nothing about channels, tenants or storage.

Everything that goes to the model passes one `redact` function first (the
tenant's vault masker): the system prompt, the history, the new message,
each tool result or error and the model's own text sent back to it; a
failure logged here is redacted too. A reply longer than `max_reply_chars`
is cut while it streams: the rest of the model's stream is dropped and the
cut is said in the text ("… [reply cut at N characters]").
"""

from __future__ import annotations

import json
import logging
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from bridge.types.backend import (
    Backend,
    ChatMessage,
    Finish,
    ModelRequest,
    TextDelta,
    ToolCall,
    ToolCallRequest,
)
from bridge.types.messages import DeltaSink
from bridge.types.tools import Tool, ToolError, TurnContext

log = logging.getLogger(__name__)

Redact = Callable[[str], str]
MAX_TOOL_RESULT_CHARS = 16_000
MAX_REPLY_CHARS = 32_000


def _same(text: str) -> str:
    return text


def cut_note(limit: int) -> str:
    return f"… [reply cut at {limit:,} characters]"


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
    reply_cut: bool = False
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
    *,
    redact: Redact = _same,
    max_reply_chars: int = MAX_REPLY_CHARS,
) -> AgentResult:
    """Run model steps until a final answer; BackendError propagates."""
    by_name: Mapping[str, Tool] = {t.schema.name: t for t in tools}
    schemas = [t.schema for t in tools]
    system = redact(system)
    convo = [_redacted(m, redact) for m in messages]
    result = AgentResult(text="", steps=0)
    pieces: list[str] = []
    room = max_reply_chars
    for step in range(1, max_steps + 1):
        result.steps = step
        step_text: list[str] = []
        calls: list[ToolCallRequest] = []
        events = backend.stream(ModelRequest(system, tuple(convo), tuple(schemas)))
        try:
            async for event in events:
                if isinstance(event, TextDelta):
                    text = event.text
                    if len(text) > room:
                        text, result.reply_cut = text[:room], True
                    room -= len(text)
                    if text and on_delta is not None:
                        if not any(step_text) and pieces:
                            await on_delta("\n\n")
                        await on_delta(text)
                    step_text.append(text)
                    if result.reply_cut:
                        break  # closing the stream drops the rest of a runaway reply
                elif isinstance(event, ToolCall):
                    calls.append(event.call)
                elif isinstance(event, Finish):
                    result.prompt_tokens += event.prompt_tokens
                    result.completion_tokens += event.completion_tokens
        finally:
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()
        text = "".join(step_text)
        if result.reply_cut:
            note = cut_note(max_reply_chars)
            if on_delta is not None:
                await on_delta("\n" + note)
            pieces.append(text + "\n" + note)
            break
        if text:
            pieces.append(text)
        if not calls:
            break
        convo.append(
            ChatMessage(
                role="assistant",
                content=redact(text),
                tool_calls=tuple(ToolCallRequest(c.id, c.name, redact(c.arguments)) for c in calls),
            )
        )
        for call in calls:
            output, run = await _run_tool(by_name, call, turn, redact)
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


def _redacted(message: ChatMessage, redact: Redact) -> ChatMessage:
    return ChatMessage(
        role=message.role,
        content=redact(message.content),
        tool_calls=tuple(
            ToolCallRequest(c.id, c.name, redact(c.arguments)) for c in message.tool_calls
        ),
        tool_call_id=message.tool_call_id,
        name=message.name,
    )


async def _run_tool(
    by_name: Mapping[str, Tool], call: ToolCallRequest, turn: TurnContext, redact: Redact
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
            except Exception as exc:
                trace = "".join(traceback.format_exception(exc))
                log.error("tool %s failed\n%s", call.name, redact(trace))
                output = f"error: the tool {call.name} failed inside roost; do not retry it now"
    output = redact(output)  # before the cut, so no part of a value survives it
    if len(output) > MAX_TOOL_RESULT_CHARS:
        cut = len(output) - MAX_TOOL_RESULT_CHARS
        output = output[:MAX_TOOL_RESULT_CHARS] + f"\n[cut: {cut:,} more characters]"
    ms = int((time.perf_counter() - started) * 1000)
    return output, ToolRun(call.name, ok, ms)
