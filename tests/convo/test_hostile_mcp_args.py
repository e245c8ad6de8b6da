"""A lone surrogate in a call's arguments reaches an external MCP server as U+FFFD.

The agent loop makes each lone surrogate of the decoded arguments U+FFFD
before any tool sees them, so the MCP client can serialise the call and the
server keeps working. The real agent loop, the fake OpenAI server over HTTP
and the small SDK server of tests/mcp (`ext_server.py`) over stdio.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bridge.app.build import Roost, build
from bridge.core.config import load_settings
from bridge.types.messages import Inbound
from tests.convo.conftest import API_KEY
from tests.fakes.fake_openai import Call, FakeOpenAI, Text, ToolCalls

EXT = Path(__file__).parent.parent / "mcp" / "ext_server.py"


@pytest.fixture
async def roost(
    home: Path, tmp_path: Path, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Roost]:
    py, ext = json.dumps(sys.executable), json.dumps(str(EXT))
    (tmp_path / "roost.toml").write_text(
        "[tenants.alice]\ntelegram_ids = [111]\n\n"
        f'[tenants.alice.mcp.ext]\ncommand = [{py}, {ext}]\nallow = ["echo", "add"]\n'
        "timeout_s = 120\n"
    )
    monkeypatch.setenv("ROOST_LLM__BASE_URL", fake.base_url)
    monkeypatch.setenv("ROOST_LLM__API_KEY", API_KEY)
    monkeypatch.setenv("ROOST_LLM__MODEL", "m1")
    monkeypatch.setenv("ROOST_LLM__MAX_RETRIES", "0")
    made = await build(load_settings())
    yield made
    await made.aclose()


def telegram(text: str) -> Inbound:
    return Inbound("telegram", "111", "111", text, uuid.uuid4().hex[:16])


def tool_results(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


async def test_a_lone_surrogate_reaches_the_server_as_a_replacement_character(
    roost: Roost, fake: FakeOpenAI
) -> None:
    fake.script(
        ToolCalls([Call("mcp__ext__echo", '{"text": "tea \\ud800 time"}')]),
        Text("Echoed."),
        ToolCalls([Call("mcp__ext__add", {"a": 1, "b": 2})]),
        Text("It is 3."),
    )
    first = await roost.core.handle(telegram("echo it"), None)
    assert first.text == "Echoed."
    assert tool_results(fake.requests[1]) == ["tea \ufffd time"]
    second = await roost.core.handle(telegram("and 1+2?"), None)  # the server still works
    assert second.text == "It is 3."
    assert tool_results(fake.requests[3])[-1] == "3"
