"""Text and numbers from a hostile model server that roost could not store.

An emoji sent as JSON escapes split across two deltas (`\\ud83d` then
`\\ude00`) arrives whole; a lone surrogate becomes U+FFFD, in text, tool
names and tool arguments, so the answer is stored and shown instead of
being lost at the database. Token counts of 2**70 or 2**62 are clamped to
10**9 (one WARNING), so the answer is kept and the tenant's budget is not
locked. The Anthropic backend does the same. Real servers on 127.0.0.1,
the real backends, a whole roost where the person's reply is what counts.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from bridge.types.backend import Finish, TextDelta, ToolCall
from tests.conftest import web_msg
from tests.fakes.fake_openai import Call, Text, ToolCalls
from tests.llm.hostile import Hostile, Roosts, collect_anthropic, sse_head, write
from tests.llm.support import collect

MAX_TOKENS = 10**9  # openai_wire.MAX_TOKENS


@pytest.fixture
async def roosts(settings, clock) -> AsyncIterator[Roosts]:
    made = Roosts(settings, clock)
    yield made
    await made.aclose()


def _text(events: list) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


async def test_an_emoji_split_across_deltas_is_joined(fake, make_backend):
    fake.script(Text("", pieces=["smile \ud83d", "\ude00 done"]))
    events = await collect(make_backend())
    assert _text(events) == "smile \U0001f600 done"
    for event in events:
        if isinstance(event, TextDelta):
            event.text.encode("utf-8")  # every delta is valid on its own


async def test_lone_surrogates_become_replacement_characters(fake, make_backend):
    fake.script(Text("", pieces=["a\udc00b ", "end \ud800"]))
    events = await collect(make_backend())
    assert _text(events) == "a\ufffdb end \ufffd"
    assert isinstance(events[-1], Finish)


async def test_tool_names_and_arguments_are_valid_unicode(fake, make_backend):
    # the pair is split between two argument fragments of 7 characters
    arguments = '{"q":"\ud83d\ude00", "r": "\udfff"}'
    fake.script(ToolCalls([Call("get_\ud800time", arguments)], piece_size=7))
    events = await collect(make_backend())
    (call,) = [e.call for e in events if isinstance(e, ToolCall)]
    assert call.name == "get_\ufffdtime"
    assert json.loads(call.arguments) == {"q": "\U0001f600", "r": "\ufffd"}
    call.arguments.encode("utf-8")


async def test_a_split_emoji_answer_reaches_the_person(fake, roosts):
    fake.script(Text("", pieces=["smile \ud83d", "\ude00 done"]))
    roost = await roosts.at(fake.base_url)
    final = await roost.core.handle(web_msg("hello", 1), None)
    assert final.kind != "error", final.text
    assert "smile \U0001f600 done" in final.text


@pytest.mark.parametrize("absurd", [2**70, 2**62])
async def test_absurd_usage_is_clamped_and_logged_once(fake, make_backend, caplog, absurd):
    caplog.set_level(logging.WARNING, logger="bridge.llm")
    fake.script(Text("fine", usage=(absurd, absurd, absurd)))
    events = await collect(make_backend())
    assert _text(events) == "fine"
    assert events[-1] == Finish("stop", MAX_TOKENS, MAX_TOKENS, MAX_TOKENS)
    warned = [r for r in caplog.records if "absurd token count" in r.getMessage()]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING


async def test_an_answer_with_absurd_usage_reaches_the_person(fake, roosts):
    fake.script(Text("kept", usage=(2**70, 5)), Text("next"), Text("again"))
    roost = await roosts.at(fake.base_url)
    final = await roost.core.handle(web_msg("hello", 1), None)
    assert final.kind != "error" and "kept" in final.text, final.text
    second = await roost.core.handle(web_msg("and now?", 2), None)
    assert second.kind != "error" and "next" in second.text, second.text


def _anthropic_event(kind: str, **fields: object) -> bytes:
    data = json.dumps({"type": kind, **fields})
    return f"event: {kind}\ndata: {data}\n\n".encode()


async def _anthropic_events(*frames: bytes) -> list:
    """Collect what the real Anthropic backend makes of `frames` sent by a real server."""

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_head(request)
        for data in frames:
            if not await write(resp, data):
                return resp
        return resp

    async with Hostile(handler) as server:
        return await collect_anthropic(server.origin)


def _text_delta(text: str, index: int = 0) -> bytes:
    return _anthropic_event(
        "content_block_delta", index=index, delta={"type": "text_delta", "text": text}
    )


async def test_anthropic_usage_is_clamped_too(caplog):
    caplog.set_level(logging.WARNING, logger="bridge.llm")
    usage = {"input_tokens": 2**70, "output_tokens": 1}
    events = await _anthropic_events(
        _anthropic_event("message_start", message={"id": "msg_1", "usage": usage}),
        _anthropic_event("content_block_start", index=0, content_block={"type": "text"}),
        _text_delta("hi"),
        _anthropic_event("content_block_stop", index=0),
        _anthropic_event(
            "message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": -3}
        ),
        _anthropic_event("message_stop"),
    )
    assert _text(events) == "hi"
    assert events[-1] == Finish("stop", MAX_TOKENS, 0, 0)
    assert sum("absurd token count" in r.getMessage() for r in caplog.records) == 1


async def test_anthropic_text_and_tool_names_are_valid_unicode():
    tool = {"type": "tool_use", "id": "toolu_1", "name": "get_\udc00time", "input": {}}
    piece = {"type": "input_json_delta", "partial_json": '{"q": "\ud83d'}
    rest = {"type": "input_json_delta", "partial_json": '\ude00"}'}
    events = await _anthropic_events(
        _anthropic_event("message_start", message={"id": "msg_1", "usage": {}}),
        _anthropic_event("content_block_start", index=0, content_block={"type": "text"}),
        _text_delta("smile \ud83d"),
        _text_delta("\ude00 done \ud800"),
        _anthropic_event("content_block_stop", index=0),
        _anthropic_event("content_block_start", index=1, content_block=tool),
        _anthropic_event("content_block_delta", index=1, delta=piece),
        _anthropic_event("content_block_delta", index=1, delta=rest),
        _anthropic_event("content_block_stop", index=1),
        _anthropic_event("message_delta", delta={"stop_reason": "tool_use"}),
        _anthropic_event("message_stop"),
    )
    assert _text(events) == "smile \U0001f600 done \ufffd"
    (call,) = [e.call for e in events if isinstance(e, ToolCall)]
    assert call.name == "get_\ufffdtime"
    assert json.loads(call.arguments) == {"q": "\U0001f600"}
