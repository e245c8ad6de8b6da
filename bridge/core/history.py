"""What a conversation keeps of a turn, as pure functions over chat messages.

A stored turn is the person's message, the tool-call steps the agent loop
took (an assistant message with `tool_calls`, then one `tool` result per
call) and the final answer. `bounded_steps` cuts what a step may keep (a
large tool result or arguments object is stored cut, with a note), so the
steps count against the session budget without filling it. `well_formed`
drops whatever would be an orphan for a model API (a tool result without
its assistant `tool_calls` message, or calls whose results are missing):
the OpenAI and Anthropic APIs reject those. `with_quote` puts the text a
message replies to before it, cut to a sane size.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from bridge.types.backend import ChatMessage, ToolCallRequest
from bridge.types.masked import require

STORED_TOOL_RESULT_CHARS = 2_000
STORED_ARGUMENTS_CHARS = 2_000
MAX_QUOTED_CHARS = 1_000


def encode_calls(calls: Sequence[ToolCallRequest]) -> str:
    """The tool calls of a message as stored text ('' when there are none)."""
    if not calls:
        return ""
    rows = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls]
    return json.dumps(rows, ensure_ascii=False, separators=(",", ":"))


def decode_calls(text: str) -> tuple[ToolCallRequest, ...]:
    """The stored tool calls back; unreadable text gives none (the message is then repaired)."""
    if not text:
        return ()
    try:
        rows = json.loads(text)
        return tuple(
            ToolCallRequest(str(r["id"]), str(r["name"]), str(r["arguments"])) for r in rows
        )
    except (ValueError, TypeError, KeyError):
        return ()


def message_chars(message: ChatMessage) -> int:
    """What a message costs against the session budget: its text and its stored calls."""
    return len(message.content) + len(encode_calls(message.tool_calls))


def _cut_text(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[cut: {len(text) - limit:,} more characters not kept]"


def _cut_arguments(arguments: str, limit: int) -> str:
    """Arguments stay a JSON object (a backend may parse them), only shorter."""
    if len(arguments) <= limit:
        return arguments
    note = f"{len(arguments):,} characters of arguments not kept in the conversation"
    return json.dumps({"_cut": note})


def bounded_steps(
    steps: Iterable[ChatMessage],
    result_chars: int = STORED_TOOL_RESULT_CHARS,
    argument_chars: int = STORED_ARGUMENTS_CHARS,
) -> tuple[ChatMessage, ...]:
    """The steps as stored: large tool results and arguments cut, the order kept."""
    out: list[ChatMessage] = []
    for m in steps:
        if m.role == "tool":
            out.append(ChatMessage("tool", _cut_text(m.content, result_chars), (), m.tool_call_id))
        elif m.tool_calls:
            calls = tuple(
                ToolCallRequest(c.id, c.name, _cut_arguments(c.arguments, argument_chars))
                for c in m.tool_calls
            )
            out.append(ChatMessage("assistant", m.content, calls))
        else:
            out.append(m)
    return tuple(out)


def require_masked(messages: Sequence[ChatMessage], where: str) -> None:
    """Every text of `messages` (content, tool-call arguments) passed the masker
    (`Unmasked` otherwise): what a store of turns checks before it writes."""
    for m in messages:
        require(m.content, where)
        for call in m.tool_calls:
            require(call.arguments, where)


def well_formed(messages: Sequence[ChatMessage]) -> tuple[ChatMessage, ...]:
    """The messages with every orphan removed: each tool result follows its call.

    An assistant message keeps its `tool_calls` only when every call is answered
    by the `tool` messages right after it (otherwise its text alone stays); a
    `tool` message that answers no call just before it is dropped.
    """
    out: list[ChatMessage] = []
    i, n = 0, len(messages)
    while i < n:
        m = messages[i]
        if m.role == "tool":
            i += 1  # no assistant tool_calls message right before it
            continue
        if not (m.role == "assistant" and m.tool_calls):
            out.append(m)
            i += 1
            continue
        j = i + 1
        while j < n and messages[j].role == "tool":
            j += 1
        ids = [c.id for c in m.tool_calls]
        results = {r.tool_call_id: r for r in messages[i + 1 : j]}
        if len(set(ids)) == len(ids) and all(c in results for c in ids):
            out.append(m)
            out.extend(results[c] for c in ids)
        elif m.content:
            out.append(ChatMessage("assistant", m.content))
        i = j
    return tuple(out)


def with_quote(text: str, quoted: str, limit: int = MAX_QUOTED_CHARS) -> str:
    """The message as the model reads it: what it replies to first, quoted, then the text."""
    quoted = quoted.strip()
    if not quoted:
        return text
    if len(quoted) > limit:
        quoted = quoted[:limit].rstrip() + " …"
    lines = "\n".join("> " + line for line in quoted.splitlines())
    return f"(replying to:\n{lines})\n\n{text}"


def quote_chars(quoted: str, limit: int = MAX_QUOTED_CHARS) -> int:
    """How many characters of a quote the model is given (for the audit record)."""
    return min(len(quoted.strip()), limit)
