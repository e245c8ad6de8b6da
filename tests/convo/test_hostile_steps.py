"""A hostile or broken model step meets bounds, and the person sees what changed.

Through the real core, the OpenAI backend, the fake server over HTTP and real
SQLite, with the real memory tools: a step that asks for thousands of tool
calls runs only `MAX_CALLS_PER_STEP` of them (the rest answered "not run" or
dropped, the next request stays valid and small, one WARNING per turn); a turn
that fails after a memory was saved still shows the "Saved to memory" notice
and offers its undo; arguments nested past Python's stack or holding lone
surrogates are a tool error or made valid, never a crash.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bridge.app.build import Roost, build
from bridge.core import agent
from bridge.core.config import load_settings
from tests.convo.conftest import API_KEY as KEY
from tests.convo.conftest import msg
from tests.convo.test_tool_steps import assert_api_valid
from tests.fakes.fake_openai import Call, FakeOpenAI, Status, Text, ToolCalls

ERROR = "Something went wrong"
MAX_CALLS_PER_STEP = 32  # run per step (`bridge.core.agent`)
MAX_KEPT_CALLS = 64  # kept in the transcript per step


@pytest.fixture
async def roost(
    home: Path, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Roost]:
    monkeypatch.setenv("ROOST_LLM__BASE_URL", fake.base_url)
    monkeypatch.setenv("ROOST_LLM__API_KEY", KEY)
    monkeypatch.setenv("ROOST_LLM__MODEL", "m1")
    monkeypatch.setenv("ROOST_LLM__MAX_RETRIES", "0")
    made = await build(load_settings())
    yield made
    await made.aclose()


def save(name: str) -> Call:
    args = {"name": name, "type": "user", "description": f"fact {name}", "content": f"{name}."}
    return Call("memory_save", args)


def tool_results(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


# --- 1. a flood of tool calls in one step ---------------------------------------------


async def test_a_flood_of_calls_in_one_step_runs_only_the_cap(
    roost: Roost, fake: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    asked = 200  # the backend refuses a step of more than 256 (`bridge.llm`)
    flood = ToolCalls([save(f"m{i}") for i in range(asked)], piece_size=10_000)
    fake.script(flood, flood, Text("Done."))  # two flooding steps, one warning
    with caplog.at_level(logging.WARNING, logger="bridge.core.agent"):
        final = await roost.core.handle(msg("remember all of these", 1))

    assert final.kind == "answer" and final.text.startswith("Done.")
    saved = [line for line in final.text.splitlines() if "Saved to memory" in line]
    assert len(saved) == MAX_CALLS_PER_STEP  # the second step saved the same names again
    assert "m31" in final.text and "m32" not in final.text
    memory = roost.tenant_dirs("local").memory
    assert len([p for p in memory.glob("user_m*.md")]) == MAX_CALLS_PER_STEP

    second = fake.requests[1]["messages"]
    assert_api_valid(second)  # every call kept has its result, in order
    assert len(second) <= 4 + MAX_KEPT_CALLS  # system, note, person, assistant, results
    assert len(second[-1 - MAX_KEPT_CALLS]["tool_calls"]) == MAX_KEPT_CALLS
    results = tool_results(fake.requests[1])
    assert len(results) == MAX_KEPT_CALLS
    assert not any(r.startswith("error") for r in results[:MAX_CALLS_PER_STEP])
    unrun = results[MAX_CALLS_PER_STEP:]
    assert all(r.startswith("error: not run: this step asked for 200 tool calls") for r in unrun)
    assert f"the {asked - MAX_KEPT_CALLS:,} calls after this one were dropped" in unrun[-1]
    assert len(json.dumps(fake.requests[2])) < 100_000  # not a request growing with the flood

    cut = [r for r in caplog.records if "tool calls cut" in r.getMessage()]
    assert len(cut) == 1 and cut[0].levelno == logging.WARNING  # once per turn
    assert "asked for 200 in one step" in cut[0].getMessage()
    assert (agent.MAX_CALLS_PER_STEP, agent.MAX_KEPT_CALLS) == (32, 64)  # as documented


async def test_a_step_at_the_cap_runs_every_call(roost: Roost, fake: FakeOpenAI) -> None:
    fake.script(ToolCalls([save(f"n{i}") for i in range(MAX_CALLS_PER_STEP)]), Text("Done."))
    final = await roost.core.handle(msg("remember these", 1))
    assert final.text.count("Saved to memory") == MAX_CALLS_PER_STEP
    assert not any(r.startswith("error") for r in tool_results(fake.requests[1]))


# --- 2. a turn that fails after its tools changed something --------------------------


async def test_a_backend_failure_after_a_save_still_shows_the_save_and_its_undo(
    roost: Roost, fake: FakeOpenAI
) -> None:
    fake.script(ToolCalls([save("pet")]), Status(500, "overloaded"))
    final = await roost.core.handle(msg("I have a cat", 1))

    assert final.kind == "error"
    assert final.text.endswith("\n\n📝 Saved to memory: pet")
    assert any(a.command.startswith("/memory undo") for a in final.actions)
    assert (roost.tenant_dirs("local").memory / "user_pet.md").exists()
    undo = next(a for a in final.actions if a.command.startswith("/memory undo"))
    undone = await roost.core.handle(msg(undo.command, 2))
    assert "pet" in undone.text
    assert not (roost.tenant_dirs("local").memory / "user_pet.md").exists()


async def test_any_failure_after_a_save_still_shows_the_save_and_its_undo(
    roost: Roost, fake: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    fake.script(ToolCalls([save("pet")]), Text("Noted."))

    async def broken_channel(piece: str) -> None:  # the channel fails on the answer's text
        raise RuntimeError("the connection went away")

    final = await roost.core.handle(msg("I have a cat", 1), broken_channel)

    assert final.kind == "error" and final.text.startswith(ERROR)
    assert final.text.endswith("\n\n📝 Saved to memory: pet")
    assert any(a.command.startswith("/memory undo") for a in final.actions)
    assert "the connection went away" in caplog.text  # logged with its ref, as the core does


async def test_a_failure_that_changed_nothing_is_said_as_before(
    roost: Roost, fake: FakeOpenAI
) -> None:
    fake.script(Text("Noted."))

    async def broken_channel(piece: str) -> None:
        raise RuntimeError("the connection went away")

    final = await roost.core.handle(msg("hello", 1), broken_channel)
    assert final.kind == "error" and final.text.startswith(ERROR)
    assert "Nothing was lost" in final.text and not final.actions


# --- 3. arguments nested past Python's stack ------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    [
        "[" * 100_000 + "]" * 100_000,
        json.dumps({"name": "deep", "content": json.loads("[" * 70 + "]" * 70)}),
    ],
    ids=["past-the-stack", "past-the-bound"],
)
async def test_deeply_nested_arguments_are_a_tool_error_and_the_turn_goes_on(
    roost: Roost, fake: FakeOpenAI, arguments: str
) -> None:
    fake.script(ToolCalls([Call("memory_save", arguments)], piece_size=50_000), Text("Sorry."))
    final = await roost.core.handle(msg("remember this", 1))

    assert (final.kind, final.text) == ("answer", "Sorry.")
    (result,) = tool_results(fake.requests[1])
    assert result == (
        "error: the arguments are not a JSON object (nested deeper than 64 levels); send valid JSON"
    )


# --- 4. lone surrogates in the arguments -----------------------------------------------


async def test_lone_surrogates_in_arguments_become_replacement_characters(
    roost: Roost, fake: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    text = (
        '{"name": "a\\ud800", "type": "user", "description": "b\\udfff",'
        ' "content": "c\\ud83d", "extra\\udc00": 1}'
    )
    reminder = '{"text": "tea \\ud800", "when": "in 20m"}'
    fake.script(
        ToolCalls([Call("memory_save", text), Call("schedule_create", reminder)]), Text("Done.")
    )
    final = await roost.core.handle(msg("remember this", 1))

    assert final.kind == "answer"
    assert "failed inside roost" not in json.dumps(fake.requests[1])
    assert "Traceback" not in caplog.text
    results = tool_results(fake.requests[1])
    assert not results[1].startswith("error"), results[1]  # the reminder was scheduled
    assert results[0].startswith("saved new memory 'a\ufffd'"), results[0]
    assert "📝 Saved to memory: a\ufffd" in final.text  # the name as the person sees it
    assert "tea \ufffd" in results[1]
    stored = "".join(p.read_text() for p in roost.tenant_dirs("local").memory.glob("*.md"))
    assert "b\ufffd" in stored and "c\ufffd" in stored
    assert any(a.command.startswith("/job rm") for a in final.actions)
