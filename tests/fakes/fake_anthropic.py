"""A fake Anthropic Messages API on 127.0.0.1, for tests.

Built from the public API documentation (Messages, streaming, tool use,
prompt caching, errors). `POST /v1/messages` checks a request as the API
does and answers 400 `invalid_request_error` (or 401/404) with the API's
error shape `{"type": "error", "error": {"type", "message"}}` otherwise:
`x-api-key` and `anthropic-version` headers; `model` known; `max_tokens` a
positive integer; `messages` non-empty, user first, roles alternating; text
blocks not blank; `tool_use` only from the assistant and `tool_result` only
from the user, first in its message, answering exactly the `tool_use` ids of
the message before; every `tool_use` answered; `cache_control` only
`ephemeral`, at most 4; tool names `^[a-zA-Z0-9_-]{1,128}$`.

With `stream: true` it streams named SSE events: `message_start` (usage with
`input_tokens`, `cache_creation_input_tokens`, `cache_read_input_tokens`),
`content_block_start/delta/stop` (`text_delta`, `input_json_delta` in small
pieces), `ping`, `message_delta` (`stop_reason`, cumulative usage),
`message_stop`. The prompt cache is simulated: the bytes of tools + system
blocks up to the last `cache_control` are remembered; the same prefix again
is counted as `cache_read_input_tokens`, a new one as
`cache_creation_input_tokens` (4 characters a token).

Script answers with `fake.script(...)`: `Text`, `ToolUse`, `Status` (an error
status with `retry-after`), `StreamError` (an `error` event after N events),
`Hang` (silent after `message_start`), `Slow`; unscripted requests echo.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")


@dataclass(frozen=True)
class Use:
    name: str
    input: Mapping[str, Any]
    id: str | None = None


@dataclass(frozen=True)
class Text:
    text: str
    pieces: Sequence[str] | None = None
    stop_reason: str = "end_turn"
    delay_s: float = 0.0  # between events


@dataclass(frozen=True)
class ToolUse:
    uses: Sequence[Use]
    text: str = ""


@dataclass(frozen=True)
class Status:
    status: int
    type: str
    message: str = ""
    retry_after: float | None = None


@dataclass(frozen=True)
class StreamError:
    type: str = "overloaded_error"
    message: str = "Overloaded"
    after_text: str = ""  # text streamed before the error event


@dataclass(frozen=True)
class Hang:
    pass


Answer = Text | ToolUse | Status | StreamError | Hang


class BadRequest(Exception):
    pass


def error_body(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _blocks(content: Any, where: str) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        if not content.strip():
            raise BadRequest(f"{where}: text content blocks must contain non-whitespace text")
        return [{"type": "text", "text": content}]
    if not isinstance(content, list) or not content:
        raise BadRequest(f"{where}.content: must be a non-empty string or list")
    for i, block in enumerate(content):
        if not isinstance(block, Mapping) or "type" not in block:
            raise BadRequest(f"{where}.content.{i}: Input should be an object with a type")
        if block["type"] == "text" and not str(block.get("text", "")).strip():
            raise BadRequest(f"{where}.content.{i}: text content blocks must be non-empty")
    return list(content)


def check_messages(messages: Any) -> None:
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages: at least one message is required")
    expected_role = "user"
    pending: set[str] = set()
    for n, message in enumerate(messages):
        where = f"messages.{n}"
        role = message.get("role") if isinstance(message, Mapping) else None
        if role not in ("user", "assistant"):
            raise BadRequest(f"{where}.role: Input should be 'user' or 'assistant'")
        if role != expected_role:
            raise BadRequest(
                'messages: roles must alternate between "user" and "assistant", '
                'and the first message must use the "user" role'
            )
        blocks = _blocks(message.get("content"), where)
        if role == "user":
            ids = [b.get("tool_use_id") for b in blocks if b["type"] == "tool_result"]
            kinds = [b["type"] for b in blocks]
            if ids and kinds[: len(ids)] != ["tool_result"] * len(ids):
                raise BadRequest(f"{where}: tool_result blocks must come first")
            if set(ids) != pending:
                raise BadRequest(
                    f"{where}.content: tool_use ids were found without tool_result blocks "
                    f"immediately after: {sorted(pending - set(ids))}; or unexpected "
                    f"tool_use_id in tool_result blocks: {sorted(set(ids) - pending)}"
                )
            pending = set()
            if any(b["type"] == "tool_use" for b in blocks):
                raise BadRequest(f"{where}: tool_use blocks are only allowed in assistant turns")
        else:
            if any(b["type"] == "tool_result" for b in blocks):
                raise BadRequest(f"{where}: tool_result blocks are only allowed in user turns")
            uses = [b for b in blocks if b["type"] == "tool_use"]
            for b in uses:
                if not isinstance(b.get("input"), Mapping) or not re.fullmatch(
                    r"[a-zA-Z0-9_-]+", str(b.get("id", ""))
                ):
                    raise BadRequest(f"{where}: tool_use needs an id and an object input")
            pending = {str(b["id"]) for b in uses}
        expected_role = "assistant" if role == "user" else "user"
    if pending:
        raise BadRequest("messages: tool_use ids were found without tool_result blocks")


def check_body(body: Any, models: Sequence[str]) -> None:
    if not isinstance(body, Mapping):
        raise BadRequest("the body must be a JSON object")
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        raise BadRequest("max_tokens: Field required")
    check_messages(body.get("messages"))
    system = body.get("system", [])
    if isinstance(system, list):
        for block in system:
            if block.get("type") != "text" or not str(block.get("text", "")).strip():
                raise BadRequest("system: text content blocks must be non-empty")
    marks = [b for b in _all_blocks(body) if isinstance(b, Mapping) and "cache_control" in b]
    if len(marks) > 4:
        raise BadRequest("A maximum of 4 blocks with cache_control may be provided")
    if any(b["cache_control"] != {"type": "ephemeral"} for b in marks):
        raise BadRequest("cache_control.type: Input should be 'ephemeral'")
    for tool in body.get("tools") or []:
        if not TOOL_NAME.fullmatch(str(tool.get("name", ""))):
            raise BadRequest("tools.0.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'")
        if (tool.get("input_schema") or {}).get("type") != "object":
            raise BadRequest("tools.0.input_schema.type: Input should be 'object'")


def _all_blocks(body: Mapping[str, Any]) -> list[Any]:
    out: list[Any] = list(body.get("tools") or [])
    if isinstance(body.get("system"), list):
        out += body["system"]
    for message in body.get("messages") or []:
        if isinstance(message.get("content"), list):
            out += message["content"]
    return out


def _sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


class FakeAnthropic:
    """`async with FakeAnthropic(api_key=K, models=[M]) as fake:`; `fake.base_url`."""

    def __init__(self, *, api_key: str, models: Sequence[str]) -> None:
        self.api_key, self.models = api_key, list(models)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.usages: list[dict[str, int]] = []
        self._script: deque[Answer] = deque()
        self._cache: set[str] = set()
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()
        self.base_url = ""

    def script(self, *answers: Answer) -> None:
        self._script.extend(answers)

    async def __aenter__(self) -> FakeAnthropic:
        app = web.Application()
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_get("/v1/models", self._list_models)
        self._runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.base_url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _list_models(self, request: web.Request) -> web.Response:
        self.headers.append(dict(request.headers))
        if request.headers.get("x-api-key") != self.api_key:
            return web.json_response(
                error_body("authentication_error", "invalid x-api-key"), status=401
            )
        data = [{"type": "model", "id": m, "display_name": m} for m in self.models]
        return web.json_response({"data": data, "has_more": False})

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        headers = dict(request.headers)
        self.headers.append(headers)
        if headers.get("x-api-key") != self.api_key:
            return web.json_response(
                error_body("authentication_error", "invalid x-api-key"), status=401
            )
        if headers.get("anthropic-version") != "2023-06-01":
            return _bad("anthropic-version: header is required")
        try:
            body = await request.json()
        except ValueError:
            return _bad("There was an issue with your request body: invalid JSON")
        self.requests.append(body)
        if body.get("model") not in self.models:
            return web.json_response(
                error_body("not_found_error", f"model: {body.get('model')}"), status=404
            )
        try:
            check_body(body, self.models)
        except BadRequest as exc:
            return _bad(str(exc))
        answer = self._script.popleft() if self._script else Text(f"echo: {_last_text(body)}")
        if isinstance(answer, Status):
            extra = {"retry-after": f"{answer.retry_after:g}"} if answer.retry_after else {}
            return web.json_response(
                error_body(answer.type, answer.message or answer.type),
                status=answer.status,
                headers=extra,
            )
        return await self._stream(request, body, answer)

    def _usage(self, body: Mapping[str, Any]) -> dict[str, int]:
        prefix: list[Any] = list(body.get("tools") or [])
        cached_upto = None
        system = body.get("system")
        blocks = system if isinstance(system, list) else []
        for i, block in enumerate(blocks):
            if "cache_control" in block:
                cached_upto = i
        total = len(json.dumps(body.get("messages"))) + len(json.dumps(system or ""))
        total += len(json.dumps(prefix))
        read = write = 0
        if cached_upto is not None:
            key = json.dumps([prefix, blocks[: cached_upto + 1]], sort_keys=True)
            size = len(key) // 4
            if key in self._cache:
                read = size
            else:
                self._cache.add(key)
                write = size
        usage = {
            "input_tokens": max(1, total // 4 - read - write),
            "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read,
        }
        self.usages.append(usage)
        return usage

    async def _stream(
        self, request: web.Request, body: Mapping[str, Any], answer: Answer
    ) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        usage = self._usage(body)
        message = {
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": body["model"],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**usage, "output_tokens": 1},
        }
        await resp.write(_sse({"type": "message_start", "message": message}))
        if isinstance(answer, Hang):
            await self._closing.wait()
            return resp
        delay = answer.delay_s if isinstance(answer, Text) else 0.0
        events = _content_events(answer)
        for event in events:
            await resp.write(_sse(event))
            if delay:
                await asyncio.sleep(delay)
        if isinstance(answer, StreamError):
            await resp.write(_sse(error_body(answer.type, answer.message)))
            await resp.write_eof()
            return resp
        stop = "tool_use" if isinstance(answer, ToolUse) else answer.stop_reason
        out_tokens = max(1, len(events))
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": out_tokens},
        }
        for event in (delta, {"type": "message_stop"}):
            await resp.write(_sse(event))
        await resp.write_eof()
        return resp


def _content_events(answer: Answer) -> list[dict[str, Any]]:
    text = getattr(answer, "text", "") or getattr(answer, "after_text", "")
    events: list[dict[str, Any]] = []
    index = 0
    if text:
        pieces = getattr(answer, "pieces", None) or re.findall(r"\S+\s*", text)
        events.append(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            }
        )
        events.append({"type": "ping"})
        for piece in pieces:
            delta = {"type": "text_delta", "text": piece}
            events.append({"type": "content_block_delta", "index": 0, "delta": delta})
        if isinstance(answer, StreamError):
            return events
        events.append({"type": "content_block_stop", "index": 0})
        index = 1
    for use in getattr(answer, "uses", ()):
        block = {
            "type": "tool_use",
            "id": use.id or f"toolu_{uuid.uuid4().hex[:24]}",
            "name": use.name,
            "input": {},
        }
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        raw = json.dumps(dict(use.input))
        for j in range(0, len(raw), 5):
            delta = {"type": "input_json_delta", "partial_json": raw[j : j + 5]}
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    return events


def _bad(message: str) -> web.Response:
    return web.json_response(error_body("invalid_request_error", message), status=400)


def _last_text(body: Mapping[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    texts = [b.get("text", "") for b in content if b.get("type") == "text"]
    return texts[-1] if texts else ""
