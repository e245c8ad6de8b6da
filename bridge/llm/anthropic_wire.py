"""The Anthropic Messages wire format: request bodies, from roost's OpenAI-shaped history.

`build_body` turns a `ModelRequest` into the JSON body of `POST /v1/messages`:
the system prompt as text blocks, `cache_control: {"type": "ephemeral"}` on
the byte-stable prefix `system[:stable_chars]`, tools as `input_schema`, and
the conversation as alternating user/assistant messages of content blocks
(`messages_json`; a user message's images as `image` blocks with a base64
source, before its text). Stream events are read by `anthropic_events.py`. No I/O.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from bridge.types.backend import ChatMessage, ModelRequest, ToolSchema

Block = dict[str, Any]
_RESERVED = frozenset({"model", "messages", "system", "stream", "tools", "max_tokens"})
_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
EPHEMERAL = {"type": "ephemeral"}
NO_RESULT = "(no result was recorded for this tool call)"


def build_body(
    model: str, request: ModelRequest, max_tokens: int, *, stream: bool = True
) -> dict[str, Any]:
    """The JSON body for one Messages API call."""
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "messages": messages_json(request.messages),
        "stream": stream,
    }
    system = system_blocks(request.system, request.stable_chars)
    if system:
        body["system"] = system
    if request.tools:
        body["tools"] = [tool_json(t) for t in request.tools]
    for key, value in request.extra.items():
        if key not in _RESERVED:
            body[key] = value
    return body


def system_blocks(system: str, stable_chars: int) -> list[Block]:
    """The system prompt as text blocks; the stable prefix marked for the prompt cache."""
    cut = max(0, min(stable_chars, len(system)))
    blocks: list[Block] = []
    head, tail = system[:cut], system[cut:].lstrip("\n")
    if head.strip():
        blocks.append({"type": "text", "text": head, "cache_control": dict(EPHEMERAL)})
    if tail.strip():
        blocks.append({"type": "text", "text": tail})
    return blocks


def tool_json(tool: ToolSchema) -> Block:
    schema = dict(tool.parameters) or {"type": "object", "properties": {}}
    schema.setdefault("type", "object")
    return {"name": tool.name, "description": tool.description, "input_schema": schema}


def tool_id(raw: str) -> str:
    """An id the API accepts (`^[a-zA-Z0-9_-]+$`), the same for tool_use and tool_result."""
    return _ID_CHARS.sub("_", raw) or "toolu_unnamed"


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class _Convo:
    """Builds alternating messages; every tool_use gets its tool_result right after."""

    def __init__(self) -> None:
        self.out: list[dict[str, Any]] = []
        self.open: list[str] = []  # tool_use ids of the last assistant message, unanswered

    def push(self, role: str, blocks: Sequence[Block]) -> None:
        if not blocks:
            return
        if role == "assistant" or blocks[0].get("type") != "tool_result":
            self.close_open()
        if self.out and self.out[-1]["role"] == role:
            self.out[-1]["content"].extend(blocks)
        else:
            self.out.append({"role": role, "content": list(blocks)})

    def close_open(self) -> None:
        """Tool calls nobody answered (a cut history) get an explicit empty result."""
        if self.open:
            missing = [_result(i, NO_RESULT, True) for i in self.open]
            self.open = []
            self.push("user", missing)

    def tool_result(self, message: ChatMessage) -> None:
        ident = tool_id(message.tool_call_id)
        if ident in self.open:
            self.open.remove(ident)
            error = message.content.lstrip().startswith("error:")
            self.push("user", [_result(ident, message.content, error)])
        else:  # its tool_use is gone (an older, cut history): keep the text
            self.push("user", _text(f"[an earlier tool result]\n{message.content}"))


def _result(ident: str, content: str, error: bool) -> Block:
    block: Block = {"type": "tool_result", "tool_use_id": ident, "content": content or "(empty)"}
    if error:
        block["is_error"] = True
    return block


def _text(text: str) -> list[Block]:
    return [{"type": "text", "text": text}] if text.strip() else []


def _images(message: ChatMessage) -> list[Block]:
    """A message's images as `image` blocks with a base64 source (before its text)."""
    return [
        {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": image.mime,
                "data": base64.b64encode(image.data).decode("ascii"),
            },
        }
        for image in message.images
    ]


def messages_json(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """roost's history as the API wants it: user first, roles alternating, blocks merged."""
    convo = _Convo()
    for message in messages:
        if message.role == "tool":
            convo.tool_result(message)
        elif message.role == "assistant":
            blocks = _text(message.content)
            calls: list[Block] = [
                {
                    "type": "tool_use",
                    "id": tool_id(c.id),
                    "name": c.name,
                    "input": _arguments(c.arguments),
                }
                for c in message.tool_calls
            ]
            if blocks or calls:
                convo.push("assistant", blocks + calls)
                convo.open = [c["id"] for c in calls]
        else:  # user (and a stray system message, told as the person's context)
            convo.push("user", [*_images(message), *_text(message.content)])
    convo.close_open()
    out = convo.out
    if out and out[0]["role"] != "user":
        out.insert(0, {"role": "user", "content": _text("(the conversation so far)")})
    if out and out[-1]["role"] == "assistant":  # a final assistant turn must not end in space
        for block in out[-1]["content"]:
            if block["type"] == "text":
                block["text"] = block["text"].rstrip()
    return out


def error_fields(obj: Any) -> tuple[str, str] | None:
    """`(error.type, error.message)` of an Anthropic error object, if it is one."""
    if not isinstance(obj, Mapping) or not isinstance(obj.get("error"), Mapping):
        return None
    err = obj["error"]
    return str(err.get("type") or "error"), str(err.get("message") or "")


_UNSAFE = (
    (re.compile(r"[a-z][a-z0-9+.-]*://\S+", re.I), "[link]"),
    (re.compile(r"\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b"), "[address]"),
    (re.compile(r"\[[0-9a-f:]+\](:\d+)?", re.I), "[address]"),
    (re.compile(r"\b[\w.-]+\.(internal|local|lan|corp)\b(:\d+)?", re.I), "[address]"),
    (re.compile(r"(?<![\w.])(/[\w.-]+){2,}"), "[path]"),
    (re.compile(r"\blocalhost(:\d+)?\b", re.I), "[address]"),
    (re.compile(r"(?<=\w):\d{2,5}\b"), ""),
)


def safe_message(text: str, limit: int = 200) -> str:
    """An API error message fit to show the person: one line, no address, link or path."""
    line = " ".join(text.split())
    for pattern, repl in _UNSAFE:
        line = pattern.sub(repl, line)
    if len(line) > limit:
        line = line[: limit - 1].rstrip() + "…"
    return line.rstrip(". ")
