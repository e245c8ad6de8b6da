"""AnthropicBackend against the fake Messages API: streaming, tools, cache, errors, timeouts."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from bridge.llm.anthropic import AnthropicBackend
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
from tests.fakes.fake_anthropic import FakeAnthropic, Hang, Status, StreamError, Text, ToolUse, Use
from tests.llm.support import SleepRecorder, collect

KEY = "sk-ant-test-0123456789abcdef"
MODEL = "claude-test-1"
SYSTEM = "You are roost. " * 40 + "\n\n## Skills\n- grade 1.5"
STABLE = SYSTEM.index("\n\n## Skills")
REQUEST = ModelRequest(SYSTEM, [ChatMessage("user", "hi")], stable_chars=STABLE)
INTERNAL = re.compile(r"https?://|\b\d{1,3}(\.\d{1,3}){3}\b|localhost|:\d{2,5}\b|(^|\s)/[\w.-]+/")


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic(api_key=KEY, models=[MODEL]) as server:
        yield server


@pytest.fixture
async def make(fake: FakeAnthropic) -> AsyncIterator[Callable[..., AnthropicBackend]]:
    made: list[AnthropicBackend] = []

    def build(**kw: Any) -> AnthropicBackend:
        args: dict[str, Any] = {"base_url": fake.base_url, "sleep": SleepRecorder()}
        args.update(kw)
        backend = AnthropicBackend(args.pop("api_key", KEY), args.pop("model", MODEL), **args)
        made.append(backend)
        return backend

    yield build
    for backend in made:
        await backend.aclose()


async def failure(backend: AnthropicBackend, caplog: pytest.LogCaptureFixture) -> BackendError:
    caplog.set_level(logging.WARNING, logger="bridge.llm")
    with pytest.raises(BackendError) as info:
        await collect(backend, REQUEST)
    text = info.value.user_message
    assert KEY not in text and not INTERNAL.search(text), text
    assert "(ref " in text
    assert all(KEY not in r.getMessage() for r in caplog.records)
    return info.value


async def test_streams_text_with_the_documented_headers_and_body(fake, make):
    fake.script(Text("Hello there, friend"))
    events = await collect(make(), REQUEST)
    assert [e for e in events if isinstance(e, TextDelta)] == [
        TextDelta("Hello "),
        TextDelta("there, "),
        TextDelta("friend"),
    ]
    finish = events[-1]
    assert isinstance(finish, Finish) and finish.reason == "stop"
    usage = fake.usages[0]
    assert finish.prompt_tokens == sum(usage.values())  # input + cache write + cache read
    headers, body = fake.headers[0], fake.requests[0]
    assert headers["x-api-key"] == KEY and headers["anthropic-version"] == "2023-06-01"
    assert "Authorization" not in headers
    assert body["max_tokens"] == 4096 and body["stream"] is True and body["model"] == MODEL
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


async def test_max_output_tokens_is_sent_as_max_tokens(fake, make):
    await collect(make(max_output_tokens=123), REQUEST)
    assert fake.requests[0]["max_tokens"] == 123


async def test_the_stable_prefix_is_marked_and_cache_reads_are_counted(fake, make):
    backend = make()
    first = await collect(backend, REQUEST)
    second = await collect(backend, REQUEST)
    system = fake.requests[0]["system"]
    assert system[0] == {
        "type": "text",
        "text": SYSTEM[:STABLE],
        "cache_control": {"type": "ephemeral"},
    }
    assert system[1] == {"type": "text", "text": "## Skills\n- grade 1.5"}
    assert fake.usages[0]["cache_creation_input_tokens"] > 0
    assert (
        fake.usages[1]["cache_read_input_tokens"] == fake.usages[0]["cache_creation_input_tokens"]
    )
    assert isinstance(first[-1], Finish) and first[-1].cached_tokens == 0
    assert isinstance(second[-1], Finish)
    assert second[-1].cached_tokens == fake.usages[1]["cache_read_input_tokens"] > 0
    assert second[-1].prompt_tokens == sum(fake.usages[1].values())


async def test_no_stable_prefix_no_cache_control(fake, make):
    await collect(make(), ModelRequest("Be brief.", [ChatMessage("user", "hi")]))
    assert fake.requests[0]["system"] == [{"type": "text", "text": "Be brief."}]


async def test_tool_use_streams_as_a_tool_call_with_its_json_input(fake, make):
    fake.script(ToolUse([Use("memory_read", {"name": "diet"}, id="toolu_01A")], text="Looking."))
    tools = [ToolSchema("memory_read", "Read a memory", {"type": "object", "properties": {}})]
    request = ModelRequest("sys", [ChatMessage("user", "what do I eat?")], tools)
    events = await collect(make(), request)
    assert events[0] == TextDelta("Looking.")
    assert events[1] == ToolCall(ToolCallRequest("toolu_01A", "memory_read", '{"name": "diet"}'))
    assert isinstance(events[-1], Finish) and events[-1].reason == "tool_calls"
    assert fake.requests[0]["tools"] == [
        {
            "name": "memory_read",
            "description": "Read a memory",
            "input_schema": {"type": "object", "properties": {}},
        }
    ]


async def test_tool_history_is_accepted_by_the_api(fake, make):
    call_a = ToolCallRequest("call_a", "memory_read", '{"name": "diet"}')
    call_b = ToolCallRequest("call_b", "memory_read", '{"name": "pets"}')
    history = [
        ChatMessage("user", "[Now: Friday]"),
        ChatMessage("user", "what do I eat and own?"),
        ChatMessage("assistant", "Checking both.", (call_a, call_b)),
        ChatMessage("tool", "vegetarian", tool_call_id="call_a"),
        ChatMessage("tool", "error: no topic pets", tool_call_id="call_b"),
    ]
    events = await collect(make(), ModelRequest("sys", history))
    assert isinstance(events[-1], Finish)  # the fake validated roles and tool ids
    messages = fake.requests[0]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [b["type"] for b in messages[1]["content"]] == ["text", "tool_use", "tool_use"]
    results = messages[2]["content"]
    assert [b["tool_use_id"] for b in results] == ["call_a", "call_b"]
    assert results[1]["is_error"] is True and "is_error" not in results[0]


async def test_401_is_a_key_problem_and_not_retried(fake, make, caplog):
    error = await failure(make(api_key="sk-ant-wrong"), caplog)
    assert error.kind == "auth" and "ROOST_LLM__API_KEY" in error.user_message
    assert len(fake.requests) == 0  # refused at the header check


async def test_404_names_the_model_setting(fake, make, caplog):
    error = await failure(make(model="claude-nope"), caplog)
    assert error.kind == "not_found"
    assert "'claude-nope'" in error.user_message and "ROOST_LLM__MODEL" in error.user_message


async def test_400_shows_the_api_message_without_addresses_or_paths(fake, make, caplog):
    message = (
        "prompt is too long: 210000 tokens > 200000 maximum; see "
        "https://docs.example.com/x or /var/lib/proxy/logs/a.log at 10.1.2.3:8080"
    )
    fake.script(Status(400, "invalid_request_error", message))
    error = await failure(make(), caplog)
    assert error.kind == "bad_response"
    assert "prompt is too long: 210000 tokens > 200000 maximum" in error.user_message
    for leaked in ("docs.example.com", "/var/lib", "10.1.2.3", "8080"):
        assert leaked not in error.user_message
    assert any("10.1.2.3" in r.getMessage() for r in caplog.records)  # the operator sees it


@pytest.mark.parametrize("status,kind", [(429, "rate_limit_error"), (529, "overloaded_error")])
async def test_429_and_529_are_retried_after_retry_after(fake, make, status, kind):
    fake.script(Status(status, kind, retry_after=3), Text("finally"))
    sleeps = SleepRecorder()
    events = await collect(make(sleep=sleeps), REQUEST)
    assert TextDelta("finally") in events
    assert sleeps.delays == [3.0]


async def test_overload_that_persists_gives_a_clear_reply(fake, make, caplog):
    fake.script(*[Status(529, "overloaded_error")] * 3)
    error = await failure(make(max_retries=2), caplog)
    assert error.kind == "unavailable"
    assert "Anthropic's API is overloaded right now (3 attempts)" in error.user_message


async def test_a_spend_limit_429_is_not_retried(fake, make, caplog):
    fake.script(Status(429, "rate_limit_error", "You have reached your spend limit."))
    error = await failure(make(), caplog)
    assert "spend limit" in error.user_message and len(fake.requests) == 1


async def test_an_error_event_before_any_text_is_retried(fake, make):
    fake.script(StreamError("overloaded_error"), Text("second try"))
    events = await collect(make(), REQUEST)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "second try"
    assert len(fake.requests) == 2


async def test_an_error_event_mid_answer_fails_without_replaying(fake, make, caplog):
    fake.script(StreamError("overloaded_error", after_text="Half an"), Text("never"))
    backend = make()
    seen: list[Any] = []
    caplog.set_level(logging.WARNING, logger="bridge.llm")
    with pytest.raises(BackendError) as info:
        async for event in backend.stream(REQUEST):
            seen.append(event)
    assert seen == [TextDelta("Half "), TextDelta("an")]
    assert "broke mid-answer" in info.value.user_message and len(fake.requests) == 1


async def test_inactivity_timeout_on_a_silent_stream(fake, make, caplog):
    fake.script(Hang())
    error = await failure(make(timeout_s=0.3), caplog)
    assert error.kind == "timeout" and "sent nothing for 0.3s" in error.user_message


async def test_a_slow_stream_longer_than_the_timeout_is_not_cut(fake, make):
    pieces = [f"p{i} " for i in range(10)]
    fake.script(Text("".join(pieces), pieces=pieces, delay_s=0.2))
    started = time.monotonic()
    events = await collect(make(timeout_s=1.0), REQUEST)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "".join(pieces)
    assert time.monotonic() - started > 1.0
