"""Unit tests of the SSE decoder and the OpenAI chunk assembler (no sockets)."""

from __future__ import annotations

import pytest

from bridge.llm.openai_wire import StreamAssembler, completion_events
from bridge.llm.sse import SSEDecoder, SSEError
from bridge.types.backend import BackendError, Finish, TextDelta, ToolCall, ToolCallRequest


def test_sse_decoder_handles_any_split_and_line_ending():
    raw = (
        ": keep-alive\r\n\r\n"
        'data: {"a": "Zürich 👋"}\r\n\r\n'
        "event: message\nid: 7\ndata:first\ndata: second\n\n"
        "data: [DONE]\r\r"
    ).encode()
    for size in (1, 2, 3, 5, len(raw)):
        decoder = SSEDecoder()
        events: list[str] = []
        for i in range(0, len(raw), size):
            events += decoder.feed(raw[i : i + size])
        events += decoder.close()
        assert events == ['{"a": "Zürich 👋"}', "first\nsecond", "[DONE]"], size


def test_sse_decoder_flushes_an_unterminated_last_event():
    decoder = SSEDecoder()
    assert decoder.feed(b"data: [DONE]") == []
    assert decoder.close() == ["[DONE]"]


@pytest.mark.parametrize("raw", [b"<html>\n", b"HTTP/1.1 200 OK\n", b"data: \xff\n"])
def test_sse_decoder_rejects_what_is_not_sse(raw):
    with pytest.raises(SSEError):
        SSEDecoder().feed(raw)


def test_sse_decoder_caps_line_length():
    with pytest.raises(SSEError):
        SSEDecoder(max_line_bytes=16).feed(b"data: " + b"x" * 32)


def chunk(delta=None, finish=None, **extra):
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {"object": "chat.completion.chunk", "choices": choices, **extra}


def test_assembler_joins_fragments_without_index_and_object_arguments():
    asm = StreamAssembler()
    events = []
    events += asm.feed(chunk({"role": "assistant"}))
    events += asm.feed(chunk({"tool_calls": [{"id": "c1", "function": {"name": "f"}}]}))
    events += asm.feed(chunk({"tool_calls": [{"function": {"arguments": '{"a":'}}]}))
    events += asm.feed(chunk({"tool_calls": [{"function": {"arguments": " 1}"}}]}))
    events += asm.feed(
        chunk({"tool_calls": [{"id": "c2", "function": {"name": "g", "arguments": {"b": 2}}}]})
    )
    events += asm.feed(chunk({}, finish="stop"))
    events += asm.finish()
    assert events == [
        ToolCall(ToolCallRequest("c1", "f", '{"a": 1}')),
        ToolCall(ToolCallRequest("c2", "g", '{"b": 2}')),
        Finish("tool_calls"),
    ]


def test_assembler_gives_missing_ids_and_empty_arguments_defaults():
    asm = StreamAssembler()
    asm.feed(chunk({"tool_calls": [{"index": 0, "function": {"name": "now"}}]}))
    (event, finish) = asm.finish()
    assert event.call.name == "now" and event.call.arguments == "{}"
    assert event.call.id.startswith("call_0_")
    assert finish == Finish("tool_calls")


def test_assembler_reads_usage_and_ignores_other_choices():
    asm = StreamAssembler()
    events = asm.feed(
        {
            "choices": [
                {"index": 1, "delta": {"content": "other"}},
                {"index": 0, "delta": {"content": "mine"}},
            ]
        }
    )
    events += asm.feed(chunk({}, finish="length"))
    events += asm.feed(chunk(None, usage={"prompt_tokens": 5, "completion_tokens": "x"}))
    events += asm.finish()
    assert events == [TextDelta("mine"), Finish("length", 5, 0)]


def test_assembler_rejects_a_call_without_a_name():
    asm = StreamAssembler()
    asm.feed(chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}))
    with pytest.raises(BackendError) as info:
        asm.finish()
    assert info.value.kind == "bad_response"


@pytest.mark.parametrize(
    "obj",
    [[], {"choices": []}, {"choices": [{"message": "x"}]}, {"error": {"message": "boom"}}],
)
def test_completion_events_reject_malformed_replies(obj):
    with pytest.raises(BackendError) as info:
        completion_events(obj)
    assert info.value.kind == "bad_response"


def test_completion_events_without_tool_calls():
    obj = {
        "choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    assert completion_events(obj) == [TextDelta("hi"), Finish("stop", 3, 1)]
