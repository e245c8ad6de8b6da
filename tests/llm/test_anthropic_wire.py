"""roost's OpenAI-shaped history -> Anthropic messages the API accepts.

Every shape is checked by the fake API's own validator (`check_messages`,
written from the public docs: user first, roles alternating, each tool_use
answered by a tool_result first in the next user message, no blank text).
"""

from __future__ import annotations

import pytest

from bridge.llm.anthropic_wire import messages_json, safe_message, system_blocks, tool_id
from bridge.types.backend import ChatMessage, ToolCallRequest
from tests.fakes.fake_anthropic import check_messages

A = ToolCallRequest("call_a", "memory_read", '{"name": "x"}')
B = ToolCallRequest("call_b", "me__log", "not json")
U, T = "user", "tool"

SHAPES = {
    "plain": [ChatMessage(U, "hi")],
    "now note then message": [ChatMessage(U, "[Now: Fri]"), ChatMessage(U, "hi")],
    "history": [ChatMessage(U, "a"), ChatMessage("assistant", "b"), ChatMessage(U, "c")],
    "two results merged": [
        ChatMessage(U, "q"),
        ChatMessage("assistant", "", (A, B)),
        ChatMessage(T, "r1", tool_call_id="call_a"),
        ChatMessage(T, "r2", tool_call_id="call_b"),
    ],
    "results then a user message": [
        ChatMessage(U, "q"),
        ChatMessage("assistant", "let me see", (A,)),
        ChatMessage(T, "r1", tool_call_id="call_a"),
        ChatMessage(U, "and?"),
    ],
    "an unanswered call (cut history)": [
        ChatMessage(U, "q"),
        ChatMessage("assistant", "", (A, B)),
        ChatMessage(T, "r1", tool_call_id="call_a"),
        ChatMessage("assistant", "done"),
        ChatMessage(U, "next"),
    ],
    "an orphan result (its call cut away)": [
        ChatMessage(T, "old result", tool_call_id="call_z"),
        ChatMessage(U, "hi"),
    ],
    "assistant first": [ChatMessage("assistant", "hello!"), ChatMessage(U, "hi")],
    "empty assistant and blank user": [
        ChatMessage(U, "a"),
        ChatMessage("assistant", "  "),
        ChatMessage(U, "   "),
        ChatMessage(U, "b"),
    ],
    "a call at the very end": [ChatMessage(U, "q"), ChatMessage("assistant", "", (A,))],
    "odd ids": [
        ChatMessage(U, "q"),
        ChatMessage("assistant", "", (ToolCallRequest("call:1/x", "f", "{}"),)),
        ChatMessage(T, "r", tool_call_id="call:1/x"),
    ],
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_every_history_shape_is_a_valid_request(name):
    check_messages(messages_json(SHAPES[name]))


def test_results_merge_into_one_user_message_and_text_and_calls_into_one_assistant():
    out = messages_json(SHAPES["two results merged"])
    assert [m["role"] for m in out] == ["user", "assistant", "user"]
    assert [b["type"] for b in out[1]["content"]] == ["tool_use", "tool_use"]
    assert out[1]["content"][0]["input"] == {"name": "x"}
    assert out[1]["content"][1]["input"] == {}  # arguments that are not JSON: an empty object
    assert [(b["tool_use_id"], b["content"]) for b in out[2]["content"]] == [
        ("call_a", "r1"),
        ("call_b", "r2"),
    ]


def test_the_now_note_and_the_message_share_one_user_turn():
    out = messages_json(SHAPES["now note then message"])
    assert out == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "[Now: Fri]"}, {"type": "text", "text": "hi"}],
        }
    ]


def test_ids_are_made_safe_the_same_way_on_both_sides():
    out = messages_json(SHAPES["odd ids"])
    assert out[1]["content"][0]["id"] == out[2]["content"][0]["tool_use_id"] == tool_id("call:1/x")
    assert tool_id("call:1/x") == "call_1_x"


def test_system_blocks_mark_only_the_stable_prefix():
    system = "BASE\n\nPROFILE\n\nSKILLS"
    stable = len("BASE\n\nPROFILE")
    assert system_blocks(system, stable) == [
        {"type": "text", "text": "BASE\n\nPROFILE", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "SKILLS"},
    ]
    assert system_blocks(system, len(system)) == [
        {"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}
    ]
    assert system_blocks(system, 0) == [{"type": "text", "text": system}]
    assert system_blocks("", 0) == []


@pytest.mark.parametrize(
    "raw,shown",
    [
        ("max_tokens: Field required", "max_tokens: Field required"),
        ("see https://x.example/docs for details.", "see [link] for details"),
        ("upstream 10.0.0.5:8000 refused", "upstream [address] refused"),
        ("log at /var/log/proxy/err.log", "log at [path]"),
        ("gpu-7.internal:9000 down", "[address] down"),
        ("line one\nline two", "line one line two"),
    ],
)
def test_safe_message(raw, shown):
    assert safe_message(raw) == shown


def test_safe_message_is_short():
    assert len(safe_message("x" * 1000)) == 200
