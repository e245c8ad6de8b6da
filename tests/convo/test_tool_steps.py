"""Tool-call steps stay in the session: a follow-up about a tool's result works.

Through the real OpenAI backend and the fake server over HTTP: turn 1 calls
the `numbers` tool; turn 2's request carries the assistant `tool_calls`
message and its `tool` result, in the order the API demands, so the model
can answer "what was the second number?". With a small budget and many tool
turns, folding (summaries) and dropping never leave an orphan in any request.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from bridge.app.build import Roost
from bridge.core.sessions import SessionKey
from tests.convo.conftest import is_summary_request, msg
from tests.fakes.fake_openai import Call, FakeOpenAI, Response, Status, Text, ToolCalls


def assert_api_valid(messages: list[dict[str, Any]]) -> None:
    """What OpenAI checks: each `tool` message answers a call of the assistant
    message before its run of tool messages, and every such call is answered."""
    pending: set[str] = set()
    for m in messages:
        if m["role"] == "tool":
            assert m["tool_call_id"] in pending, f"orphan tool message: {m}"
            pending.discard(m["tool_call_id"])
            continue
        assert not pending, f"calls without results before {m}"
        if m["role"] == "assistant":
            pending = {c["id"] for c in m.get("tool_calls") or []}
    assert not pending


def answer_from_tool_results(body: dict[str, Any]) -> Response:
    """A model that can only answer from the tool results it is shown."""
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if not results:
        return Text("I do not know which numbers you mean.")
    second = results[-1].split(", ")[1]
    return Text(f"The second number was {second}.")


async def test_a_follow_up_question_sees_the_tool_call_and_its_result(
    wired: Roost, fake: FakeOpenAI
) -> None:
    fake.script(
        ToolCalls([Call("numbers", {"count": 3}, id="call_abc")]),
        Text("Here are three numbers: 17, 43 and 71."),
    )
    fake.responder = answer_from_tool_results
    first = await wired.core.handle(msg("give me three numbers", 1))
    assert first.text == "Here are three numbers: 17, 43 and 71."
    second = await wired.core.handle(msg("what was the second number it returned?", 2))
    assert second.text == "The second number was 43."

    sent = fake.requests[2]["messages"]
    assert_api_valid(sent)
    roles = [m["role"] for m in sent]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user", "user"]
    call = sent[2]["tool_calls"][0]
    assert (call["id"], call["function"]["name"]) == ("call_abc", "numbers")
    assert sent[3] == {"role": "tool", "tool_call_id": "call_abc", "content": "17, 43, 71"}
    assert sent[4]["content"] == first.text


@pytest.mark.parametrize("summaries_work", [True, False])
async def test_folding_and_dropping_never_leave_an_orphan(
    wired: Roost, fake: FakeOpenAI, summaries_work: bool
) -> None:
    def model(body: dict[str, Any]) -> Response:
        if is_summary_request(body):
            if not summaries_work:
                return Status(500, "overloaded")
            numbers = re.findall(r"Tool result: ([0-9, ]+)", body["messages"][1]["content"])
            return Text(f"They asked for numbers {len(numbers)} times.")
        if body["messages"][-1]["role"] == "user":  # a new question: call the tool twice
            return ToolCalls([Call("numbers", {"count": 40}), Call("numbers", {"count": 2})])
        return Text("Done: " + "n" * 150)

    fake.responder = model
    for turn in range(1, 13):
        reply = await wired.core.handle(msg(f"question {turn}: numbers please " + "q" * 80, turn))
        assert reply.text.startswith("Done"), reply.text
        await wired.compactor.idle()
    chats = [b for b in fake.requests if not is_summary_request(b)]
    summaries = [b for b in fake.requests if is_summary_request(b)]
    for body in fake.requests:
        assert_api_valid(body["messages"])
    assert summaries, "the budget was never reached"
    session = await wired.sessions.load(SessionKey("local", "web", "c1"), time.time())
    assert session.chars <= 1000 and session.turns == 12
    last = chats[-1]["messages"]
    if summaries_work:
        assert session.summarised > 0 and session.dropped == 0
        assert session.history[0].content.startswith("Summary of the earlier conversation: They")
        assert last[1]["content"] == session.history[0].content
        assert last[2]["role"] == "user"  # after the summary, a whole turn begins
    else:
        assert session.summarised == 0 and session.dropped > 0 and session.summary == ""
        assert last[1]["role"] == "user" and last[2]["tool_calls"]  # a whole turn, no orphan
    assert session.kept + session.summarised + session.dropped == 12
