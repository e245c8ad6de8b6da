"""The OpenAI chat-completions wire format: request bodies and answer events.

`build_body` turns a `ModelRequest` into the JSON body of
`POST /chat/completions` (a user message with images becomes content parts:
text, then `image_url` parts holding `data:` URLs). `StreamAssembler` turns streamed
`chat.completion.chunk` objects into `TextDelta`/`ToolCall`/`Finish` events,
re-assembling tool calls whose `arguments` arrive in pieces (keyed by
`index`). `completion_events` does the same for a non-streaming
`chat.completion` object. No I/O here.

A hostile or broken server cannot make roost hold more than it can use: one
call's `arguments` are capped at `MAX_ARGUMENTS_CHARS` (8 Mi characters),
the whole answer (text plus every call's name and arguments) at
`MAX_ANSWER_CHARS` (32 Mi), the calls of one answer at `MAX_TOOL_CALLS`;
past a cap the reply is a `bad_response` ("the model server sent a reply
roost could not read"), as is JSON nested too deep to parse. A tool name
longer than `MAX_TOOL_NAME_CHARS` (256) is cut to a short name no tool has,
so the call is answered as an unknown tool. Text, tool names, ids and
arguments are valid Unicode: a surrogate pair split across two deltas (an
emoji sent as `\\ud83d` then `\\ude00`) is joined, a lone surrogate becomes
U+FFFD. Token counts above `MAX_TOKENS` (10**9 a call) are clamped, with one
WARNING per reply, so an absurd usage report never breaks the ledger.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bridge.llm.faults import ServerFault
from bridge.types.backend import (
    BackendError,
    ChatMessage,
    Finish,
    ModelEvent,
    ModelRequest,
    TextDelta,
    ToolCall,
    ToolCallRequest,
)
from bridge.types.messages import valid_unicode

log = logging.getLogger(__name__)

_RESERVED = frozenset({"model", "messages", "stream", "stream_options", "tools"})
MAX_ARGUMENTS_CHARS = 8 * 1024 * 1024  # one tool call's arguments
MAX_ANSWER_CHARS = 32 * 1024 * 1024  # text plus every call's name and arguments
MAX_TOOL_CALLS = 256  # tool calls in one answer
MAX_TOOL_NAME_CHARS = 256  # longer: cut to a short name no tool has
MAX_TOKENS = 10**9  # a usage count above this is clamped
_SHORT_NAME = 48
_HIGH_AT_END = re.compile("[\ud800-\udbff]$")


def build_body(model: str, request: ModelRequest, *, stream: bool = True) -> dict[str, Any]:
    """The JSON body for one chat-completions call."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages.extend(message_json(m) for m in request.messages)
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": dict(t.parameters),
                },
            }
            for t in request.tools
        ]
    for key, value in request.extra.items():
        if key not in _RESERVED:
            body[key] = value
    return body


def message_json(message: ChatMessage) -> dict[str, Any]:
    """One `ChatMessage` in the shape the API expects."""
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.images and message.role == "user":
        out["content"] = content_parts(message)
    if message.role == "assistant" and message.tool_calls:
        out["content"] = message.content or None
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in message.tool_calls
        ]
    if message.name:
        out["name"] = message.name
    return out


def content_parts(message: ChatMessage) -> list[dict[str, Any]]:
    """A user message with images: its text, then each image as a base64 `data:` URL."""
    parts: list[dict[str, Any]] = []
    if message.content.strip():
        parts.append({"type": "text", "text": message.content})
    for image in message.images:
        data = base64.b64encode(image.data).decode("ascii")
        url = f"data:{image.mime};base64,{data}"
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def bad_response(detail: str) -> BackendError:
    """An unreadable reply: the person is told so, the log gets `detail`."""
    return ServerFault("bad_response", "the model server sent a reply roost could not read", detail)


def server_reported(message: str) -> BackendError:
    """An error object from the server: its text goes to the log only (it may name hosts)."""
    return ServerFault("bad_response", "the model server reported an error", message)


def server_error_message(obj: Any) -> str | None:
    """The `error.message` of an OpenAI-style error object, if it is one."""
    if not isinstance(obj, Mapping) or "error" not in obj:
        return None
    err = obj["error"]
    if isinstance(err, Mapping):
        return str(err.get("message") or err.get("code") or "unknown error")
    return str(err)


def server_error_code(obj: Any) -> str:
    """The `error.code` (else `error.type`) of an OpenAI-style error object ("" when none):
    e.g. "insufficient_quota", which a 429 also carries when the account has no credit."""
    err = obj.get("error") if isinstance(obj, Mapping) else None
    if not isinstance(err, Mapping):
        return ""
    code = err.get("code") or err.get("type") or ""
    return code if isinstance(code, str) else ""


def parse_json(text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad_response("bad JSON") from exc
    except RecursionError as exc:
        raise bad_response("JSON nested too deep") from exc


valid_text = valid_unicode  # surrogate pairs joined, lone surrogates U+FFFD


def tool_name(name: str) -> str:
    """A valid, bounded tool name: an absurdly long one becomes a short unknown name."""
    name = valid_text(name)
    if len(name) <= MAX_TOOL_NAME_CHARS:
        return name
    return f"{name[:_SHORT_NAME]}...({len(name)} characters)"


class ValidText:
    """Streamed text made valid: a high surrogate at a delta's end waits for its low half."""

    def __init__(self) -> None:
        self._high = ""

    def feed(self, text: str) -> str:
        text = self._high + text
        self._high = ""
        if _HIGH_AT_END.search(text):
            text, self._high = text[:-1], text[-1]
        return valid_text(text)

    def end(self) -> str:
        """A high surrogate no low half followed: U+FFFD (else "")."""
        pending, self._high = self._high, ""
        return "\ufffd" if pending else ""


class TokenCounts:
    """Clamps usage counts to `MAX_TOKENS`, logging one WARNING per reply."""

    def __init__(self) -> None:
        self.clamped = False

    def count(self, value: Any) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            return 0
        if value <= MAX_TOKENS:
            return value
        if not self.clamped:
            self.clamped = True
            log.warning(
                "the model server reported an absurd token count (about 2**%d); counted as %d",
                value.bit_length() - 1,
                MAX_TOKENS,
            )
        return MAX_TOKENS

    def cached(self, usage: Mapping[str, Any]) -> int:
        """`usage.prompt_tokens_details.cached_tokens`: the part of prompt_tokens from cache."""
        details = usage.get("prompt_tokens_details")
        return self.count(details.get("cached_tokens")) if isinstance(details, Mapping) else 0


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    size: int = 0  # characters in `arguments`

    def add(self, piece: str) -> None:
        self.size += len(piece)
        if self.size > MAX_ARGUMENTS_CHARS:
            raise bad_response(
                f"a tool call's arguments are longer than {MAX_ARGUMENTS_CHARS} characters"
            )
        self.arguments.append(piece)

    def request(self, index: int) -> ToolCallRequest:
        call_id = valid_text(self.id) or f"call_{index}_{uuid.uuid4().hex[:12]}"
        arguments = valid_text("".join(self.arguments))
        return ToolCallRequest(call_id, tool_name(self.name), arguments or "{}")


def _arguments_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value)  # some servers send an object instead of a string


def reasoning_apart(part: Mapping[str, Any]) -> int:
    """How many characters of the model's reasoning a delta or message carries in a field
    of its own (`reasoning_content`: vLLM and SGLang with a reasoning parser, DeepSeek's
    API, LM Studio; `reasoning`: newer vLLM, Ollama, OpenRouter): then the content is the
    answer alone."""
    return max((len(v) for k in _REASONING_KEYS if isinstance(v := part.get(k), str)), default=0)


_REASONING_KEYS = ("reasoning_content", "reasoning")


class StreamAssembler:
    """Feed it streamed chunks; it returns events as they become complete. `reasoning`
    counts the characters of reasoning the deltas carried apart (`reasoning_apart`)."""

    def __init__(self) -> None:
        self.reasoning = 0
        self._calls: dict[int, _PartialCall] = {}
        self._last_index: int | None = None
        self._emitted_calls = 0
        self._size = 0  # characters of the answer so far (text, names, arguments)
        self._valid = ValidText()  # joins a surrogate pair split across deltas
        self._tokens = TokenCounts()
        self.reason: str | None = None
        self.saw_choice = False
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cached_tokens = 0

    def feed(self, chunk: Any) -> list[ModelEvent]:
        if not isinstance(chunk, Mapping):
            raise bad_response("a stream chunk is not a JSON object")
        message = server_error_message(chunk)
        if message is not None:
            raise server_reported(message)
        self._usage(chunk.get("usage"))
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise bad_response("`choices` is not a list")
        events: list[ModelEvent] = []
        for choice in choices:
            if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                continue
            self.saw_choice = True
            delta = choice.get("delta") or {}
            if not isinstance(delta, Mapping):
                raise bad_response("`delta` is not an object")
            self.reasoning += reasoning_apart(delta)
            content = delta.get("content")
            if isinstance(content, str) and content:
                self._grow(len(content))
                events.extend(self._text(content))
            fragments = delta.get("tool_calls") or []
            if not isinstance(fragments, list):
                raise bad_response("`tool_calls` is not a list")
            for fragment in fragments:
                self._fragment(fragment)
            if choice.get("finish_reason"):
                self.reason = str(choice["finish_reason"])
                events.extend(self._flush())
        return events

    def _grow(self, chars: int) -> None:
        self._size += chars
        if self._size > MAX_ANSWER_CHARS:
            raise bad_response(f"the answer is longer than {MAX_ANSWER_CHARS} characters")

    def _text(self, content: str) -> list[ModelEvent]:
        content = self._valid.feed(content)
        return [TextDelta(content)] if content else []

    def _pending_text(self) -> list[ModelEvent]:
        pending = self._valid.end()
        return [TextDelta(pending)] if pending else []

    def finish(self) -> list[ModelEvent]:
        """End of stream: pending tool calls, then the one `Finish`."""
        if not self.saw_choice:
            raise bad_response("the stream was empty")
        events = self._pending_text()
        events.extend(self._flush())
        reason = self.reason or "stop"
        if self._emitted_calls and reason == "stop":
            reason = "tool_calls"
        events.append(
            Finish(reason, self.prompt_tokens, self.completion_tokens, self.cached_tokens)
        )
        return events

    def _usage(self, usage: Any) -> None:
        if isinstance(usage, Mapping):
            self.prompt_tokens = self._tokens.count(usage.get("prompt_tokens"))
            self.completion_tokens = self._tokens.count(usage.get("completion_tokens"))
            self.cached_tokens = self._tokens.cached(usage)

    def _implicit_index(self, new_id: object) -> int:
        """Servers that omit `index`: a new id starts a new call, else the last one goes on."""
        last_index = self._last_index
        last = self._calls.get(last_index) if last_index is not None else None
        if last_index is None or last is None or (new_id and last.id and new_id != last.id):
            return max(self._calls, default=-1) + 1
        return last_index

    def _fragment(self, fragment: Any) -> None:
        if not isinstance(fragment, Mapping):
            raise bad_response("a tool call fragment is not an object")
        index = fragment.get("index")
        if not isinstance(index, int):
            index = self._implicit_index(fragment.get("id"))
        self._last_index = index
        call = self._calls.get(index)
        if call is None:
            if self._emitted_calls + len(self._calls) >= MAX_TOOL_CALLS:
                raise bad_response(f"the answer has more than {MAX_TOOL_CALLS} tool calls")
            call = self._calls[index] = _PartialCall()
        if fragment.get("id") and not call.id:
            call.id = str(fragment["id"])[:MAX_TOOL_NAME_CHARS]
        function = fragment.get("function") or {}
        if not isinstance(function, Mapping):
            raise bad_response("a tool call's `function` is not an object")
        if function.get("name") and not call.name:
            call.name = tool_name(str(function["name"]))
            self._grow(len(call.name))
        piece = _arguments_text(function.get("arguments"))
        if piece:
            self._grow(len(piece))
            call.add(piece)

    def _flush(self) -> list[ModelEvent]:
        events: list[ModelEvent] = self._pending_text() if self._calls else []
        for index in sorted(self._calls):
            call = self._calls[index]
            if not call.name:
                raise bad_response("a tool call has no function name")
            events.append(ToolCall(call.request(index)))
        self._emitted_calls += len(self._calls)
        self._calls.clear()
        self._last_index = None
        return events


def completion_reasoning(obj: Any) -> bool:
    """A non-streaming `chat.completion` carries the reasoning apart (`reasoning_apart`)."""
    choices = obj.get("choices") if isinstance(obj, Mapping) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return False
    msg = choices[0].get("message")
    return isinstance(msg, Mapping) and reasoning_apart(msg) > 0


def completion_events(obj: Any) -> list[ModelEvent]:
    """Events for a non-streaming `chat.completion` object."""
    message = server_error_message(obj)
    if message is not None:
        raise server_reported(message)
    if not isinstance(obj, Mapping):
        raise bad_response("the reply is not a JSON object")
    choices = obj.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise bad_response("the reply has no `choices`")
    choice = choices[0]
    msg = choice.get("message")
    if not isinstance(msg, Mapping):
        raise bad_response("the reply has no `message`")
    events: list[ModelEvent] = []
    size = 0
    content = msg.get("content")
    if isinstance(content, str) and content:
        size += len(content)
        events.append(TextDelta(valid_text(content)))
    calls = msg.get("tool_calls") or []
    if not isinstance(calls, list):
        raise bad_response("`tool_calls` is not a list")
    if len(calls) > MAX_TOOL_CALLS:
        raise bad_response(f"the answer has more than {MAX_TOOL_CALLS} tool calls")
    for i, call in enumerate(calls):
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not function.get("name"):
            raise bad_response("a tool call has no function name")
        partial = _PartialCall(
            str(call.get("id") or "")[:MAX_TOOL_NAME_CHARS], tool_name(str(function["name"]))
        )
        partial.add(_arguments_text(function.get("arguments")))
        size += len(partial.name) + partial.size
        events.append(ToolCall(partial.request(i)))
    if size > MAX_ANSWER_CHARS:
        raise bad_response(f"the answer is longer than {MAX_ANSWER_CHARS} characters")
    reason = str(choice.get("finish_reason") or ("tool_calls" if calls else "stop"))
    raw_usage = obj.get("usage")
    usage: Mapping[str, Any] = raw_usage if isinstance(raw_usage, Mapping) else {}
    tokens = TokenCounts()
    events.append(
        Finish(
            reason,
            tokens.count(usage.get("prompt_tokens")),
            tokens.count(usage.get("completion_tokens")),
            tokens.cached(usage),
        )
    )
    return events
