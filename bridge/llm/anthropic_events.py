"""Anthropic Messages stream events -> roost's `TextDelta` / `ToolCall` / `Finish`.

`EventReader.feed` takes one decoded SSE `data` object at a time:
`message_start` (input and cache usage), `content_block_start` /
`content_block_delta` (`text_delta`, `input_json_delta`) /
`content_block_stop` (a tool call is complete), `message_delta` (stop reason,
cumulative usage), `message_stop`, `ping`, and `error` events sent mid-stream
(overloaded and server errors become `Retry`, as their HTTP twins 529 and 500
would). Unknown event and block types are skipped, as the API's versioning
policy asks. `message_events` reads a non-streamed `Message` object. No I/O.
Hostile replies are bounded and made valid as `openai_wire` does it: token
counts clamped (10**9 a call, one WARNING per reply), one tool call's input
capped at `MAX_ARGUMENTS_CHARS` and the answer at `MAX_ANSWER_CHARS` (past
either: `bad_response`), a long tool name cut to a short unknown one, split
surrogate pairs joined and lone surrogates replaced by U+FFFD.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bridge.llm.anthropic_wire import error_fields, safe_message
from bridge.llm.faults import ServerFault
from bridge.llm.http_retry import Retry
from bridge.llm.openai_wire import (
    MAX_ANSWER_CHARS,
    MAX_ARGUMENTS_CHARS,
    TokenCounts,
    ValidText,
    tool_name,
    valid_text,
)
from bridge.types.backend import (
    BackendError,
    Finish,
    ModelEvent,
    TextDelta,
    ToolCall,
    ToolCallRequest,
)

STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}
RETRYABLE = {
    "overloaded_error": "overloaded",
    "api_error": "unavailable",
    "rate_limit_error": "rate_limited",
    "timeout_error": "unavailable",
}


def bad_response(detail: str) -> BackendError:
    return ServerFault(
        "bad_response", "the Anthropic API sent a reply roost could not read", detail
    )


def stream_error(kind: str, message: str) -> Exception:
    """An error event in the stream (or an error body): retry it or tell it."""
    if kind in RETRYABLE:
        return Retry(RETRYABLE[kind], f"{kind} in the stream: {message}")
    return ServerFault(
        "bad_response",
        f"the Anthropic API reported an error ({kind}: {safe_message(message)})",
        f"{kind}: {message}",
    )


@dataclass
class Usage:
    """Token counts; each report is cumulative, so the latest value of a field wins."""

    input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0
    tokens: TokenCounts = field(default_factory=TokenCounts, repr=False, compare=False)

    def update(self, usage: Any) -> None:
        if not isinstance(usage, Mapping):
            return
        for key, attr in (
            ("input_tokens", "input"),
            ("cache_read_input_tokens", "cache_read"),
            ("cache_creation_input_tokens", "cache_write"),
            ("output_tokens", "output"),
        ):
            if key in usage and usage[key] is not None:
                setattr(self, attr, self.tokens.count(usage[key]))

    def finish(self, reason: str) -> Finish:
        prompt = self.input + self.cache_read + self.cache_write
        return Finish(reason, prompt, self.output, self.cache_read)


@dataclass
class _ToolBlock:
    id: str
    name: str
    pieces: list[str] = field(default_factory=list)
    start_input: Any = None

    size: int = 0  # characters in `pieces`

    def add(self, piece: str) -> None:
        self.size += len(piece)
        if self.size > MAX_ARGUMENTS_CHARS:
            raise bad_response(f"a tool input is longer than {MAX_ARGUMENTS_CHARS} characters")
        self.pieces.append(piece)

    def request(self) -> ToolCallRequest:
        text = valid_text("".join(self.pieces))
        if not text.strip():
            start = self.start_input if isinstance(self.start_input, Mapping) else {}
            text = json.dumps(start)
        return ToolCallRequest(valid_text(self.id), tool_name(self.name), text)


class EventReader:
    """Feed it stream events in order; it returns roost events as they complete."""

    def __init__(self) -> None:
        self.usage = Usage()
        self.stop_reason: str | None = None
        self.started = False  # message_start seen
        self.stopped = False  # message_stop seen
        self._tools: dict[int, _ToolBlock] = {}
        self._valid = ValidText()
        self._size = 0  # characters of the answer so far

    def _grow(self, chars: int) -> None:
        self._size += chars
        if self._size > MAX_ANSWER_CHARS:
            raise bad_response(f"the answer is longer than {MAX_ANSWER_CHARS} characters")

    def feed(self, obj: Any) -> list[ModelEvent]:
        if not isinstance(obj, Mapping):
            raise bad_response("a stream event is not a JSON object")
        kind = obj.get("type")
        if kind == "error":
            fields = error_fields(obj) or ("error", "")
            raise stream_error(*fields)
        if kind == "message_start":
            self.started = True
            message = obj.get("message")
            self.usage.update(message.get("usage") if isinstance(message, Mapping) else None)
        elif kind == "content_block_start":
            self._start(obj)
        elif kind == "content_block_delta":
            return self._delta(obj)
        elif kind == "content_block_stop":
            block = self._tools.pop(_index(obj), None)
            pending = self._valid.end()
            events: list[ModelEvent] = [TextDelta(pending)] if pending else []
            if block is not None:
                events.append(ToolCall(block.request()))
            return events
        elif kind == "message_delta":
            delta = obj.get("delta")
            if isinstance(delta, Mapping) and delta.get("stop_reason"):
                self.stop_reason = str(delta["stop_reason"])
            self.usage.update(obj.get("usage"))
        elif kind == "message_stop":
            self.stopped = True
        return []

    def _start(self, obj: Mapping[str, Any]) -> None:
        block = obj.get("content_block")
        if isinstance(block, Mapping) and block.get("type") == "tool_use":
            if not block.get("name"):
                raise bad_response("a tool_use block has no name")
            ident = str(block.get("id") or f"toolu_{_index(obj)}")[:256]
            name = tool_name(str(block["name"]))
            self._grow(len(name))
            self._tools[_index(obj)] = _ToolBlock(ident, name, [], block.get("input"))

    def _delta(self, obj: Mapping[str, Any]) -> list[ModelEvent]:
        delta = obj.get("delta")
        if not isinstance(delta, Mapping):
            raise bad_response("a content_block_delta has no delta object")
        if delta.get("type") == "text_delta":
            text = delta.get("text")
            if not isinstance(text, str) or not text:
                return []
            self._grow(len(text))
            text = self._valid.feed(text)
            return [TextDelta(text)] if text else []
        if delta.get("type") == "input_json_delta":
            block = self._tools.get(_index(obj))
            piece = delta.get("partial_json")
            if block is not None and isinstance(piece, str):
                self._grow(len(piece))
                block.add(piece)
        return []

    def finish(self) -> list[ModelEvent]:
        """End of the stream: unfinished tool calls, then the one `Finish`."""
        pending = self._valid.end()
        events: list[ModelEvent] = [TextDelta(pending)] if pending else []
        events.extend(ToolCall(b.request()) for _, b in sorted(self._tools.items()))
        self._tools.clear()
        raw = self.stop_reason or "end_turn"
        events.append(self.usage.finish(STOP_REASONS.get(raw, raw)))
        return events


def _index(obj: Mapping[str, Any]) -> int:
    index = obj.get("index")
    return index if isinstance(index, int) else 0


def message_events(obj: Any) -> list[ModelEvent]:
    """Events of a non-streamed `Message` object (a proxy that ignored `stream`)."""
    fields = error_fields(obj)
    if fields is not None:
        raise stream_error(*fields)
    if not isinstance(obj, Mapping) or not isinstance(obj.get("content"), list):
        raise bad_response("the reply is not a Message object")
    reader = EventReader()
    reader.usage.update(obj.get("usage"))
    events: list[ModelEvent] = []
    for i, block in enumerate(obj["content"]):
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and block.get("text"):
            events.append(TextDelta(valid_text(str(block["text"]))))
        elif block.get("type") == "tool_use" and block.get("name"):
            tool = _ToolBlock(str(block.get("id") or f"toolu_{i}")[:256], str(block["name"]))
            tool.start_input = block.get("input")
            events.append(ToolCall(tool.request()))
    reader.stop_reason = str(obj.get("stop_reason") or "end_turn")
    return [*events, *reader.finish()]
