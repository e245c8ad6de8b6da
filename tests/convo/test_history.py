"""Pure history functions: no orphan ever reaches a model, steps are stored cut, quotes."""

from __future__ import annotations

import json
import random

from bridge.core.history import (
    bounded_steps,
    decode_calls,
    encode_calls,
    message_chars,
    well_formed,
    with_quote,
)
from bridge.types.backend import ChatMessage, ToolCallRequest


def call(i: int, name: str = "me__sum", args: str = "{}") -> ToolCallRequest:
    return ToolCallRequest(f"call_{i}", name, args)


def valid_for_openai(messages: tuple[ChatMessage, ...]) -> bool:
    """The rule both APIs enforce, written independently of the code under test:
    every tool message answers a call of the nearest assistant message before the
    run of tool messages it belongs to, and every call of that message is answered."""
    pending: set[str] = set()
    for m in messages:
        if m.role == "tool":
            if m.tool_call_id not in pending:
                return False
            pending.discard(m.tool_call_id)
            continue
        if pending:
            return False  # a call left unanswered
        if m.role == "assistant":
            pending = {c.id for c in m.tool_calls}
    return not pending


def test_a_complete_step_is_kept_as_it_is() -> None:
    history = (
        ChatMessage("user", "add them"),
        ChatMessage("assistant", "", (call(1), call(2))),
        ChatMessage("tool", "3", tool_call_id="call_1"),
        ChatMessage("tool", "7", tool_call_id="call_2"),
        ChatMessage("assistant", "3 and 7"),
    )
    assert well_formed(history) == history


def test_orphans_are_removed_both_ways() -> None:
    history = (
        ChatMessage("tool", "lost", tool_call_id="call_0"),  # its call was folded away
        ChatMessage("user", "q"),
        ChatMessage("assistant", "checking", (call(1), call(2))),
        ChatMessage("tool", "3", tool_call_id="call_1"),  # call_2 never answered
        ChatMessage("assistant", "done"),
    )
    fixed = well_formed(history)
    assert [(m.role, m.content, m.tool_calls) for m in fixed] == [
        ("user", "q", ()),
        ("assistant", "checking", ()),
        ("assistant", "done", ()),
    ]


def test_random_histories_always_come_out_valid() -> None:
    rng = random.Random(14)
    for _ in range(2000):
        messages: list[ChatMessage] = []
        for _ in range(rng.randint(0, 12)):
            kind = rng.choice(["user", "assistant", "calls", "tool", "tool"])
            if kind == "calls":
                ids = rng.sample(range(6), rng.randint(1, 3))
                messages.append(
                    ChatMessage("assistant", rng.choice(["", "x"]), tuple(map(call, ids)))
                )
            elif kind == "tool":
                messages.append(ChatMessage("tool", "r", tool_call_id=f"call_{rng.randrange(6)}"))
            else:
                messages.append(ChatMessage(kind, "t"))  # type: ignore[arg-type]
        fixed = well_formed(messages)
        assert valid_for_openai(fixed), messages
        if valid_for_openai(tuple(messages)) and all(
            len({c.id for c in m.tool_calls}) == len(m.tool_calls) for m in messages
        ):
            assert fixed == tuple(messages)  # nothing valid is ever removed


def test_large_results_and_arguments_are_stored_cut_and_stay_usable() -> None:
    source = json.dumps({"name": "t", "source": "x = 1\n" * 2000})
    steps = (
        ChatMessage("assistant", "", (call(1, "forge_create", source),)),
        ChatMessage("tool", "row\n" * 5000, tool_call_id="call_1"),
    )
    stored = bounded_steps(steps)
    assert [m.role for m in stored] == ["assistant", "tool"]
    assert stored[1].tool_call_id == "call_1" and stored[0].tool_calls[0].id == "call_1"
    assert len(stored[1].content) < 2_100 and "more characters not kept" in stored[1].content
    args = json.loads(stored[0].tool_calls[0].arguments)  # still a JSON object
    assert "not kept" in args["_cut"]
    assert sum(map(message_chars, stored)) < 2_300
    small = (ChatMessage("assistant", "", (call(2, "me__x", '{"n": 2}'),)),)
    assert bounded_steps(small) == small


def test_stored_calls_round_trip_and_bad_text_reads_as_none() -> None:
    calls = (call(1, "me__a", '{"q": "ü"}'), call(2, "me__b"))
    assert decode_calls(encode_calls(calls)) == calls
    assert encode_calls(()) == "" and decode_calls("") == ()
    assert decode_calls("[{not json") == () and decode_calls('[{"id": 1}]') == ()


def test_a_quote_goes_before_the_message_cut_to_a_sane_size() -> None:
    assert with_quote("yes", "") == "yes" and with_quote("yes", "  \n ") == "yes"
    assert with_quote("why?", "line one\nline two") == (
        "(replying to:\n> line one\n> line two)\n\nwhy?"
    )
    long = with_quote("ok", "a" * 50_000)
    assert len(long) < 1_100 and long.endswith("…)\n\nok")
