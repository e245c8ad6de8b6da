"""OpenAIBackend against the fake server: streaming, tool calls, JSON fallback."""

from __future__ import annotations

import pytest

from bridge.types.backend import (
    BackendError,
    ChatMessage,
    Finish,
    ModelRequest,
    TextDelta,
    ToolCall,
    ToolCallRequest,
    ToolSchema,
)
from tests.fakes.fake_openai import Call, FakeOpenAI, Json, Text, ToolCalls
from tests.llm.support import KEY, MODEL, REQUEST, collect


async def test_streams_text_then_one_finish_with_usage(fake, make_backend):
    fake.script(Text("Hello there, friend", usage=(12, 3)))
    events = await collect(make_backend())
    assert events == [
        TextDelta("Hello "),
        TextDelta("there, "),
        TextDelta("friend"),
        Finish("stop", 12, 3),
    ]
    body = fake.requests[0]
    assert body["model"] == MODEL
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "hi"},
    ]
    assert "tools" not in body
    assert fake.request_headers[0]["Authorization"] == f"Bearer {KEY}"


async def test_sends_tools_and_tool_history_in_openai_shape(fake, make_backend):
    call = ToolCallRequest("call_1", "memory_read", '{"name": "diet"}')
    request = ModelRequest(
        system="sys",
        messages=[
            ChatMessage("user", "what do I eat?"),
            ChatMessage("assistant", "", tool_calls=(call,)),
            ChatMessage("tool", "vegetarian", tool_call_id="call_1"),
        ],
        tools=[ToolSchema("memory_read", "Read a memory", {"type": "object", "properties": {}})],
        extra={"temperature": 0.2, "model": "ignored"},
    )
    fake.script(Text("You are vegetarian."))
    await collect(make_backend(), request)
    body = fake.requests[0]
    assert body["model"] == MODEL
    assert body["temperature"] == 0.2
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "memory_read",
                "description": "Read a memory",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    assert body["messages"][1:] == [
        {"role": "user", "content": "what do I eat?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "memory_read", "arguments": '{"name": "diet"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "vegetarian"},
    ]


@pytest.mark.parametrize("interleave", [False, True])
async def test_reassembles_two_parallel_tool_calls(fake, make_backend, interleave):
    fake.script(
        ToolCalls(
            [
                Call("get_weather", {"city": "Zürich", "unit": "celsius"}, id="call_a"),
                Call("memory_save", '{"name": "trip", "content": "Zürich in May"}', id="call_b"),
            ],
            text="Let me check.",
            interleave=interleave,
            piece_size=3,
        )
    )
    events = await collect(make_backend())
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Let me check."
    calls = [e.call for e in events if isinstance(e, ToolCall)]
    assert calls == [
        ToolCallRequest("call_a", "get_weather", '{"city": "Z\\u00fcrich", "unit": "celsius"}'),
        ToolCallRequest("call_b", "memory_save", '{"name": "trip", "content": "Zürich in May"}'),
    ]
    assert isinstance(events[-1], Finish) and events[-1].reason == "tool_calls"
    assert sum(isinstance(e, Finish) for e in events) == 1


async def test_accepts_a_non_streaming_json_reply(fake, make_backend):
    fake.script(Json("Sure.", calls=[Call("lookup", {"q": "x"}, id="call_9")]))
    events = await collect(make_backend())
    assert events[0] == TextDelta("Sure.")
    assert events[1] == ToolCall(ToolCallRequest("call_9", "lookup", '{"q": "x"}'))
    assert isinstance(events[2], Finish) and events[2].reason == "tool_calls"
    assert events[2].prompt_tokens > 0


async def test_parses_keepalive_comments_and_chunks_split_mid_line():
    text = "Grüße 👋 aus Zürich — ça va?"
    async with FakeOpenAI(keepalive=True, split_writes=True) as server:
        server.script(Text(text, pieces=list(text)))
        from bridge.llm.openai import OpenAIBackend

        backend = OpenAIBackend(server.base_url, None, "m")
        try:
            events = await collect(backend)
        finally:
            await backend.aclose()
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == text
    assert "Authorization" not in server.request_headers[0]


async def test_connection_cut_before_any_text_is_retried(fake, make_backend, sleeps):
    fake.script(Text("lost", cut_after=1), Text("found"))
    events = await collect(make_backend())
    assert [e for e in events if isinstance(e, TextDelta)] == [TextDelta("found")]
    assert len(fake.requests) == 2
    assert len(sleeps.delays) == 1


async def test_connection_cut_mid_answer_is_not_replayed(fake, make_backend, sleeps):
    fake.script(Text("one two three four", cut_after=3), Text("never sent"))
    seen = []
    with pytest.raises(BackendError) as info:
        async for event in make_backend().stream(REQUEST):
            seen.append(event)
    assert info.value.kind == "unavailable"
    assert "mid-answer" in info.value.user_message
    assert seen == [TextDelta("one "), TextDelta("two ")]
    assert len(fake.requests) == 1
    assert sleeps.delays == []
    assert fake.pending == 1


async def test_describe_names_the_model_and_server_the_host_only(make_backend):
    backend = make_backend(base_url="https://user:pw@api.example.com/v1?x=1", model="gpt-4o-mini")
    assert backend.describe() == "openai model=gpt-4o-mini"
    assert backend.server() == "api.example.com"
    assert backend.name == "openai"


async def test_a_consumer_may_stop_early_and_the_backend_stays_usable(fake, make_backend):
    fake.script(Text("one two three four five"), Text("again"))
    backend = make_backend()
    stream = backend.stream(REQUEST)
    async for event in stream:
        assert event == TextDelta("one ")
        break
    await stream.aclose()
    events = await collect(backend)
    assert TextDelta("again") in events
