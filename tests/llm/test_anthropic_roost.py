"""The Anthropic backend inside a real roost: agent loop, tools, prompt cache, replies.

A roost built in process (real SQLite, real sandbox, real prompt assembly)
talks to the fake Messages API, which validates every request as the API does.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bridge.app.build import Roost, build
from bridge.core.config import Settings
from bridge.llm.anthropic import AnthropicBackend
from bridge.loadout.vault import set_value
from bridge.types.audit_sink import MemoryAudit
from tests.conftest import Clock, web_msg
from tests.fakes.fake_anthropic import FakeAnthropic, Status, Text, ToolUse, Use
from tests.llm.support import SleepRecorder

KEY = "sk-ant-test-roost-0123456789"
MODEL = "claude-test-1"
ADD = '''
def run(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
'''


@pytest.fixture
async def served(settings: Settings, clock: Clock) -> AsyncIterator[tuple[FakeAnthropic, Roost]]:
    async with FakeAnthropic(api_key=KEY, models=[MODEL]) as fake:
        backend = AnthropicBackend(KEY, MODEL, base_url=fake.base_url, sleep=SleepRecorder())
        roost = await build(settings, backend=backend, audit=MemoryAudit(), clock=clock)
        try:
            yield fake, roost
        finally:
            await roost.aclose()


def _results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        block
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_result"
    ]


async def test_builtin_and_personal_tools_round_trip(served):
    fake, roost = served
    save = {"name": "diet", "type": "user", "description": "diet", "content": "vegetarian"}
    fake.script(
        ToolUse([Use("memory_save", save, id="toolu_save")], text="Saving."),
        Text("Noted."),
        ToolUse([Use("forge_create", {"name": "add", "description": "add", "source": ADD})]),
        Text("Made add."),
        ToolUse([Use("me__add", {"a": 2, "b": 3}, id="toolu_add")]),
        Text("It is 5."),
    )
    first = await roost.core.handle(web_msg("remember I am vegetarian", 1), None)
    assert first.kind == "answer" and "Noted." in first.text
    assert "vegetarian" in (roost.tenant_dirs("local").memory / "user_diet.md").read_text()
    result = _results(fake.requests[1])
    assert [r["tool_use_id"] for r in result] == ["toolu_save"] and "is_error" not in result[0]
    assert (await roost.core.handle(web_msg("write an adding tool", 2), None)).kind == "answer"
    await roost.core.handle(web_msg("/tool save add", 3), None)
    saved = await roost.core.handle(web_msg("/tool save add yes", 3), None)
    assert "Saved me.add" in saved.text, saved.text
    third = await roost.core.handle(web_msg("add 2 and 3", 4), None)
    assert third.text == "It is 5."
    body = fake.requests[-1]
    assert any(t["name"] == "me__add" for t in body["tools"])
    (result,) = [r for r in _results(body) if r["tool_use_id"] == "toolu_add"]
    assert "5" in result["content"] and "is_error" not in result


async def test_the_cached_prefix_is_byte_identical_across_turns(served):
    fake, roost = served
    for n in range(3):
        final = await roost.core.handle(web_msg(f"hello {n}", n), None)
        assert final.kind == "answer"
    prefixes = [body["system"][0] for body in fake.requests]
    assert prefixes[0]["cache_control"] == {"type": "ephemeral"}
    assert prefixes[0] == prefixes[1] == prefixes[2]
    assert "## Memory" in prefixes[0]["text"]  # the leading stable blocks are in it
    assert fake.usages[0]["cache_creation_input_tokens"] > 0
    assert (
        fake.usages[1]["cache_read_input_tokens"] == fake.usages[0]["cache_creation_input_tokens"]
    )
    assert fake.usages[2]["cache_read_input_tokens"] > 0


async def test_volatile_blocks_stay_out_of_the_cached_prefix(served):
    fake, roost = served
    fake.script(
        ToolUse([Use("forge_create", {"name": "add", "description": "adds", "source": ADD})]),
        Text("ok"),
    )
    await roost.core.handle(web_msg("make a tool", 1), None)
    await roost.core.handle(web_msg("/tool save add", 2), None)
    await roost.core.handle(web_msg("/tool save add yes", 2), None)
    await roost.core.handle(web_msg("hi", 3), None)
    system = fake.requests[-1]["system"]
    assert "me.add" not in system[0]["text"]
    assert "## Your personal tools" in system[1]["text"] and "cache_control" not in system[1]


async def test_a_secret_in_the_prompt_keeps_the_offset_right(served):
    # the vault mask shortens the stable part; the cache mark must still end at a block
    fake, roost = served
    dirs = roost.tenant_dirs("local")
    secret = "hunter2-very-secret-value-that-is-long"
    set_value(dirs, "pw", secret)  # as `roost vault set local pw` does
    dirs.user_md.write_text(f"# Me\nMy password is {secret} do not tell\n")
    fake.script(
        ToolUse([Use("forge_create", {"name": "add", "description": "adds", "source": ADD})]),
        Text("ok"),
    )
    await roost.core.handle(web_msg("make a tool", 1), None)
    await roost.core.handle(web_msg("/tool save add", 2), None)
    await roost.core.handle(web_msg("/tool save add yes", 2), None)
    await roost.core.handle(web_msg("hi", 3), None)
    await roost.core.handle(web_msg("hi again", 4), None)
    assert secret not in json.dumps(fake.requests[-1])
    head, tail = fake.requests[-1]["system"]
    assert "[vault:pw] do not tell" in head["text"]
    assert tail["text"].startswith("## Your personal tools")
    assert head == fake.requests[-2]["system"][0]


@pytest.mark.parametrize(
    "status,kind,expect",
    [
        (401, "authentication_error", "rejected roost's API key"),
        (404, "not_found_error", "has no model"),
        (529, "overloaded_error", "overloaded right now"),
        (400, "invalid_request_error", "prompt is too long"),
    ],
)
async def test_each_error_gives_a_clear_reply(served, status, kind, expect):
    fake, roost = served
    tries = 4 if status == 529 else 1  # 529 is retried 3 times
    fake.script(*[Status(status, kind, "prompt is too long: 5 tokens > 4 maximum")] * tries)
    final = await roost.core.handle(web_msg("hello", 1), None)
    assert final.kind == "error" and expect in final.text
    assert "(ref " in final.text and "127.0.0.1" not in final.text
    again = await roost.core.handle(web_msg("hello", 2), None)
    assert again.kind == "answer"  # nothing was stored; the next message simply works
