"""A secret the memory screen refused is masked wherever the turn is stored.

The person types a GitHub token (not a vault value) and asks to remember it;
the model calls `memory_save` with it; the screen refuses. Through the real
core, the fake OpenAI server over HTTP and real SQLite: the stored turn (the
person's message, the tool step's arguments, the answer), every later request
to the model (the history replayed), the summary of folded turns, the
archive after /reset and the /export ZIP hold no spelling of the token.
Only the turn that carried it saw it (the model had it from the person).
"""

from __future__ import annotations

import json
import sqlite3
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bridge.app.build import Roost
from tests.conftest import web_msg
from tests.fakes.fake_openai import Call, FakeOpenAI, Text, ToolCalls, last_user_text
from tests.fakes.roost_on_fake import roost_on_fake
from tests.personal_tools.leakcheck import leaks
from tests.stored_rows import stored_text

TOKEN = "ghp_R8x2Kq9LmZ4vT7wYb1Nc6Hd3Jf5Gs0Pa2Ue8"
PASSWORD = "Sommer2024!x"
SECRETS = {"token": TOKEN, "password": PASSWORD}
KEY = "sk-test-key-000000000000"


def respond(body: dict[str, Any]) -> Text | ToolCalls:
    messages = body["messages"]
    if str(messages[0]["content"]).startswith("You condense"):  # the summary request
        return Text("Summary: " + last_user_text(body)[-600:])
    if messages[-1]["role"] == "tool":
        return Text("I cannot keep secrets in memory; put them in the vault.")
    said = last_user_text(body)
    if "remember my github token" in said:
        content = f"CI token: {TOKEN}\nwifi password is {PASSWORD}"
        args = {"name": "ci", "type": "reference", "description": "CI access", "content": content}
        return ToolCalls([Call("memory_save", args)])
    return Text("Noted. " + "filler " * 60)


@pytest.fixture
async def small(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Roost, FakeOpenAI]]:
    async with roost_on_fake(
        monkeypatch, KEY, respond, ROOST_LIMITS__SESSION_CHARS="1000"
    ) as built:  # folds after a few turns
        yield built


async def test_a_refused_secret_is_masked_wherever_the_turn_is_stored(
    small: tuple[Roost, FakeOpenAI], home: Path
) -> None:
    roost, fake = small
    asked = f"please remember my github token {TOKEN} and my wifi password is {PASSWORD}"
    answer = await roost.core.handle(web_msg(asked, 1))
    assert answer.text.startswith("I cannot keep secrets")
    refused = [m for m in fake.requests[-1]["messages"] if m["role"] == "tool"][-1]
    assert "Not saved" in refused["content"]  # the screen refused the memory_save
    assert not (roost.tenant_dirs("local").memory / "reference_ci.md").exists()
    first = stored_text(home)  # the person's message, the memory_save step, the answer
    assert first.count("[refused secret]") >= 4 and leaks(first, SECRETS) == []
    seen_by_now = len(fake.requests)

    for n in range(2, 7):  # later turns replay the history; the session folds
        await roost.core.handle(web_msg(f"and what else? {n}", n))
        await roost.compactor.idle()
    summaries = [r for r in fake.requests if str(r["messages"][0]["content"]).startswith("You")]
    assert summaries, "the session never folded"
    later = json.dumps(fake.requests[seen_by_now:], ensure_ascii=False)
    assert "[refused secret]" in later  # the stored turn, as the model reads it now
    assert leaks(later, SECRETS) == []

    assert leaks(stored_text(home), SECRETS) == []  # the summary too

    export = await roost.core.handle(web_msg("/export", 8))
    assert export.files, export.text
    with zipfile.ZipFile(export.files[0].path) as zf:
        inside = "\n".join(zf.read(n).decode("utf-8", "replace") for n in zf.namelist())
    assert "session_messages" in inside and leaks(inside, SECRETS) == []

    await roost.core.handle(web_msg("/reset", 9))
    db = sqlite3.connect(home / "roost.db")
    kept = [r[0] for r in db.execute("SELECT text FROM conversation_messages")]
    db.close()
    assert kept and leaks("\n".join(kept), SECRETS) == []
