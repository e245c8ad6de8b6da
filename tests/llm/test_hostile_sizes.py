"""A hostile OpenAI-compatible server cannot make roost hold an unbounded reply.

Each test drives the real `OpenAIBackend` against a real server on
127.0.0.1 that sends more than roost's caps allow (an SSE event that never
ends, one tool call's arguments in many 1 MiB pieces, an endless text, a
gzip bomb of a JSON body, JSON nested 100 000 deep): the person reads "the
model server sent a reply roost could not read", never an out-of-memory
daemon or a traceback. A tool name of 200 KB is answered as an unknown tool
with a short name. The Anthropic backend caps a tool input the same way.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from bridge.types.backend import BackendError, ToolCall
from tests.conftest import web_msg
from tests.fakes.fake_openai import Call, Text, ToolCalls
from tests.llm.hostile import Hostile, Roosts, collect_anthropic, finish, frame, sse_head, write
from tests.llm.support import collect

MIB = 1024 * 1024
MAX_TOOL_NAME_CHARS = 256  # openai_wire.MAX_TOOL_NAME_CHARS
UNREADABLE = "the model server sent a reply roost could not read"


@pytest.fixture
async def roosts(settings, clock) -> AsyncIterator[Roosts]:
    made = Roosts(settings, clock)
    yield made
    await made.aclose()


async def unreadable(backend: Any) -> BackendError:
    with pytest.raises(BackendError) as info:
        await collect(backend)
    assert info.value.kind == "bad_response", info.value.user_message
    assert UNREADABLE in info.value.user_message.lower()
    return info.value


async def test_an_event_whose_data_lines_never_end_is_refused(make_backend):
    """20 `data:` lines of 1 MiB in one event: valid JSON, but past the 16 MiB event cap."""

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_head(request)
        head = b'data: {"choices": [{"index": 0, "delta": {"content": "hi"}}]\n'
        if not await write(resp, head):
            return resp
        for _ in range(20):
            if not await write(resp, b"data: " + b" " * MIB + b"\n"):
                return resp
        return await finish(resp, b"data: }\n\n", frame({}, "stop"))

    async with Hostile(handler) as server:
        await unreadable(make_backend(base_url=server.base_url, max_retries=0))


async def test_one_tool_calls_arguments_in_endless_pieces_are_refused(make_backend):
    """12 argument fragments of 1 MiB for one call: past the 8 Mi characters a call may have."""

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_head(request)
        head = {"index": 0, "id": "call_1", "function": {"name": "memory_write", "arguments": ""}}
        if not await write(resp, frame({"tool_calls": [head]})):
            return resp
        piece = frame({"tool_calls": [{"index": 0, "function": {"arguments": "a" * MIB}}]})
        for _ in range(12):
            if not await write(resp, piece):
                return resp
        return await finish(resp, frame({}, "tool_calls"))

    async with Hostile(handler) as server:
        await unreadable(make_backend(base_url=server.base_url, max_retries=0))


async def test_an_endless_text_answer_is_refused(make_backend):
    """34 text deltas of 1 MiB: past the 32 Mi characters one answer may have."""

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_head(request)
        delta = frame({"content": "b" * MIB})
        for _ in range(34):
            if not await write(resp, delta):
                return resp
        return await finish(resp, frame({}, "stop"))

    async with Hostile(handler) as server:
        await unreadable(make_backend(base_url=server.base_url, max_retries=0))


def _gzip_bomb(spaces: int, tail: bytes) -> bytes:
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: a gzip container
    block = b" " * MIB
    parts = [squeeze.compress(block) for _ in range(spaces // MIB)]
    parts += [squeeze.compress(tail), squeeze.flush()]
    return b"".join(parts)


async def test_a_gzip_bomb_json_body_is_refused(make_backend):
    """70 MiB of spaces (about 70 KB gzipped) before a valid completion: past the 64 MiB cap."""
    completion = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}
    body = _gzip_bomb(70 * MIB, json.dumps(completion).encode())
    assert len(body) < MIB

    async def handler(request: web.Request) -> web.StreamResponse:
        headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
        return web.Response(body=body, headers=headers)

    async with Hostile(handler) as server:
        await unreadable(make_backend(base_url=server.base_url, max_retries=0))


@pytest.mark.parametrize("streamed", [True, False])
async def test_json_nested_too_deep_is_an_unreadable_reply(make_backend, streamed):
    deep = b"[" * 100_000 + b"]" * 100_000

    async def handler(request: web.Request) -> web.StreamResponse:
        if not streamed:
            return web.Response(body=deep, headers={"Content-Type": "application/json"})
        resp = await sse_head(request)
        return await finish(resp, b"data: " + deep + b"\n\n")

    async with Hostile(handler) as server:
        await unreadable(make_backend(base_url=server.base_url, max_retries=0))


async def test_a_200_kb_tool_name_becomes_a_short_unknown_name(fake, make_backend):
    fake.script(ToolCalls([Call("x" * 200_000, {"q": 1})]))
    events = await collect(make_backend())
    calls = [e.call for e in events if isinstance(e, ToolCall)]
    assert len(calls) == 1
    assert len(calls[0].name) <= MAX_TOOL_NAME_CHARS
    assert not calls[0].name.isidentifier()  # no tool can have this name
    assert json.loads(calls[0].arguments) == {"q": 1}


async def test_a_long_tool_name_is_answered_as_an_unknown_tool(fake, roosts):
    """Through a whole roost: the model is told the tool does not exist, in a short line."""
    fake.script(ToolCalls([Call("x" * 200_000, {"q": 1})]), Text("done"))
    roost = await roosts.at(fake.base_url)
    final = await roost.core.handle(web_msg("hello", 1), None)
    assert final.kind != "error" and "done" in final.text, final.text
    follow_up = json.dumps(fake.requests[1]["messages"])
    assert "there is no tool named" in follow_up
    assert len(follow_up) < 20_000  # the 200 KB name is not sent back


async def test_anthropic_tool_input_in_endless_pieces_is_refused():
    def event(kind: str, **fields: object) -> bytes:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_head(request)
        tool = {"type": "tool_use", "id": "toolu_1", "name": "memory_write", "input": {}}
        head = (
            event("message_start", message={"id": "msg_1", "usage": {}}),
            event("content_block_start", index=0, content_block=tool),
        )
        for data in head:
            if not await write(resp, data):
                return resp
        piece = event(
            "content_block_delta",
            index=0,
            delta={"type": "input_json_delta", "partial_json": "a" * MIB},
        )
        for _ in range(12):
            if not await write(resp, piece):
                return resp
        for data in (event("content_block_stop", index=0), event("message_stop")):
            if not await write(resp, data):
                return resp
        return resp

    async with Hostile(handler) as server:
        with pytest.raises(BackendError) as info:
            await collect_anthropic(server.origin)
    assert info.value.kind == "bad_response"
    assert "sent a reply roost could not read" in info.value.user_message
