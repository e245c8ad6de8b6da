"""A secret the memory screen refuses mid-turn is masked on every way the turn takes next.

`test_refused_secrets.py` covers the turn that is answered. Here, through the
real core, the fake OpenAI server over HTTP and real SQLite, the branches
after the refusal: the model server fails on the next step (the failed turn
kept for the history, `/export`, `/reset`); the model streams the secret back
in its answer (the deltas) while the tool card shows the refused call; the
model names a tool call, or its id, after the secret (the stored step, later
requests to the model, the export). The person typed the token; the model
calls `memory_save` with it; the screen refuses.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bridge.app.build import Roost
from bridge.types.progress import ToolStep
from tests.conftest import web_msg
from tests.fakes.fake_openai import Call, FakeOpenAI, Status, Text, ToolCalls, last_user_text
from tests.fakes.roost_on_fake import roost_on_fake
from tests.personal_tools.leakcheck import leaks
from tests.stored_rows import stored_text, table_texts

TOKEN = "ghp_R8x2Kq9LmZ4vT7wYb1Nc6Hd3Jf5Gs0Pa2Ue8"
SECRETS = {"token": TOKEN}
KEY = "sk-test-key-000000000000"
SAVE = {"name": "ci", "type": "reference", "description": "CI access", "content": f"CI: {TOKEN}"}


def respond(body: dict[str, Any]) -> Any:
    """The person's words say what the model does after its refused `memory_save`."""
    messages = body["messages"]
    said = last_user_text(body)
    results = [m for m in messages if m["role"] == "tool"]
    if "remember" not in said:
        return Text("It is sunny.")
    if not results:
        ids = {"by id": TOKEN, "by odd id": f"odd <{TOKEN}>"}
        save_id = next((v for k, v in ids.items() if k in said), None)
        return ToolCalls([Call("memory_save", SAVE, id=save_id)])
    if "fails" in said:
        return Status(500)  # the model server fails on the step after the refusal
    if "repeat" in said:
        return Text(f"Could not save it. For the record your token is {TOKEN} - keep it safe.")
    if len(results) == 1:  # a "tool" named after the refused secret, its id too
        return ToolCalls([Call(TOKEN, {"q": TOKEN}, id=TOKEN)])
    return Text("ok")


@pytest.fixture
async def small(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Roost, FakeOpenAI]]:
    async with roost_on_fake(monkeypatch, KEY, respond, ROOST_LLM__MAX_RETRIES="0") as built:
        yield built


async def exported(roost: Roost, n: int) -> str:
    """Every member of the /export ZIP, as text."""
    export = await roost.core.handle(web_msg("/export", n))
    assert export.files, export.text
    with zipfile.ZipFile(export.files[0].path) as zf:
        return "\n".join(zf.read(m).decode("utf-8", "replace") for m in zf.namelist())


def refused(fake: FakeOpenAI) -> None:
    """The screen refused the memory_save (the model was told so)."""
    tool = [m for r in fake.requests for m in r["messages"] if m["role"] == "tool"]
    assert tool and "Not saved" in tool[0]["content"], tool


async def test_a_turn_that_fails_after_a_refusal_keeps_no_secret(
    small: tuple[Roost, FakeOpenAI], home: Path
) -> None:
    roost, fake = small
    asked = f"please remember my github token {TOKEN}, if the server fails"
    answer = await roost.core.handle(web_msg(asked, 1))
    assert answer.kind == "error" and "HTTP 500" in answer.text, answer.text
    refused(fake)
    kept = table_texts(home / "roost.db")["failed_turns"]  # the history shows what was asked
    assert any("please remember my github token [refused secret]" in t for t in kept), kept
    assert leaks(stored_text(home), SECRETS) == []

    inside = await exported(roost, 2)
    assert "[refused secret]" in inside and leaks(inside, SECRETS) == []
    await roost.core.handle(web_msg("/reset", 3))
    assert leaks(stored_text(home), SECRETS) == []


async def test_a_secret_refused_mid_turn_is_not_streamed_nor_shown_on_the_tool_card(
    small: tuple[Roost, FakeOpenAI], home: Path
) -> None:
    roost, fake = small
    deltas: list[str] = []
    progress: list[object] = []

    async def on_delta(piece: str) -> None:
        deltas.append(piece)

    async def on_progress(step: object) -> None:
        progress.append(step)

    asked = f"please remember my github token {TOKEN} and repeat it"
    answer = await roost.core.handle(web_msg(asked, 1), on_delta, on_progress)
    refused(fake)
    streamed = "".join(deltas)
    assert "your token is [refused secret] - keep it safe" in streamed, streamed
    assert leaks(streamed, SECRETS) == [] and leaks(answer.text, SECRETS) == []
    cards = [s for s in progress if isinstance(s, ToolStep)]
    assert [(s.name, s.state) for s in cards] == [
        ("memory_save", "start"),
        ("memory_save", "error"),
    ]
    assert all("[refused secret]" in s.args for s in cards), cards
    assert leaks(repr(cards), SECRETS) == []


async def test_a_tool_call_named_after_a_refused_secret_is_kept_without_it(
    small: tuple[Roost, FakeOpenAI], home: Path
) -> None:
    roost, fake = small
    progress: list[object] = []

    async def on_progress(step: object) -> None:
        progress.append(step)

    asked = f"please remember my github token {TOKEN}"
    answer = await roost.core.handle(web_msg(asked, 1), None, on_progress)
    assert answer.text == "ok"
    refused(fake)
    in_turn = fake.requests[2]["messages"]  # the model hears of its call, without the secret
    call = [m for m in in_turn if m.get("tool_calls")][-1]["tool_calls"][0]
    assert call["function"]["name"] == "unknown_tool"
    assert "there is no tool named '[refused secret]'" in in_turn[-1]["content"]
    assert in_turn[-1]["tool_call_id"] == call["id"]
    assert leaks(json.dumps(in_turn[-2:]), SECRETS) == []  # the call and its result
    cards = [s for s in progress if isinstance(s, ToolStep)]
    assert [s.name for s in cards] == ["memory_save"] * 2 + ["_refused_secret_"] * 2
    assert leaks(repr(cards), SECRETS) == []
    assert leaks(stored_text(home), SECRETS) == []

    n = len(fake.requests)
    await roost.core.handle(web_msg("what's the weather like", 2))
    later = fake.requests[n:]
    assert leaks(json.dumps(later), SECRETS) == []
    paired(later[0]["messages"])
    inside = await exported(roost, 3)
    assert "session_messages" in inside and leaks(inside, SECRETS) == []


@pytest.mark.parametrize("how", ["by id", "by odd id"])
async def test_a_call_id_made_of_the_refused_secret_is_stored_masked_and_still_paired(
    small: tuple[Roost, FakeOpenAI], home: Path, how: str
) -> None:
    roost, fake = small
    asked = f"please remember my github token {TOKEN}, {how}"
    assert (await roost.core.handle(web_msg(asked, 1))).text == "ok"
    refused(fake)
    assert leaks(stored_text(home), SECRETS) == []
    n = len(fake.requests)
    await roost.core.handle(web_msg("what's the weather like", 2))
    replayed = fake.requests[n]["messages"]
    assert leaks(json.dumps(replayed), SECRETS) == []
    paired(replayed)


def paired(messages: list[dict[str, Any]]) -> None:
    """Each tool result answers a call of the assistant message before it (same id)."""
    calls = [c["id"] for m in messages for c in m.get("tool_calls") or ()]
    results = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert results and results == calls, (calls, results)
    assert all(c.replace("_", "").replace("-", "").isalnum() for c in calls), calls
