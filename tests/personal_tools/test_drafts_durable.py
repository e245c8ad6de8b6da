"""Drafts live in the database per (tenant, channel, chat) until saved or expired.

A draft written with `forge_create` survives a restart and is seen by
`roost send` in another process (each a real `python -m bridge.cli.main`
against the fake OpenAI server). The store itself (versions, expiry, masked
source only) is tested on both backends in `tests/storage/test_drafts_store.py`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.app.build import build
from bridge.core.config import Settings
from tests.conftest import ScriptedBackend, web_msg
from tests.fakes.fake_openai import Call, FakeOpenAI, Text, ToolCalls, last_user_text
from tests.schedule.database import database_of
from tests.spine.test_terminal_send import KEY, model_env, run

ONE = 'def run() -> int:\n    """One."""\n    return 1\n'


async def test_a_draft_survives_a_restart(settings: Settings) -> None:
    create = json.dumps({"name": "num", "description": "a number", "source": ONE})
    first = await build(settings, backend=ScriptedBackend([("forge_create", create)], "made"))
    try:
        await first.core.handle(web_msg("write num", 1))
    finally:
        await first.aclose()
    backend = ScriptedBackend([("draft__num", "{}")], "it is 1")
    second = await build(settings, backend=backend)
    try:
        assert "num v1" in (await second.core.handle(web_msg("/tools", 2))).text
        await second.core.handle(web_msg("try num", 3))
        assert "draft__num" in [t.name for t in backend.requests[0].tools]
        assert [m.content for m in backend.requests[1].messages if m.role == "tool"][-1] == "1"
        offer = await second.core.handle(web_msg("/tool save num", 4))
        saved = await second.core.handle(web_msg(offer.actions[0].command, 5))
        assert saved.text.startswith("Saved me.num"), saved.text
    finally:
        await second.aclose()
    async with database_of(settings.home / "roost.db") as db:
        assert await db.fetch_value("SELECT COUNT(*) FROM tool_drafts") == 0  # saved: gone


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key=KEY, models=["m1"]) as server:
        yield server


async def test_roost_send_in_another_process_sees_the_draft(home: Path, fake: FakeOpenAI) -> None:
    def respond(body: dict[str, object]) -> Text | ToolCalls:
        messages = body["messages"]
        assert isinstance(messages, list)
        if last_user_text(body) == "write num" and messages[-1]["role"] == "user":
            call = {"name": "num", "description": "a number", "source": ONE}
            return ToolCalls([Call("forge_create", call)])
        return Text("done")

    fake.responder = respond
    env = model_env(home, fake)
    code, out, err = await run(["send", "write num"], env)
    assert code == 0 and "Draft num written (v1)" in out, (out, err)
    code, out, err = await run(["send", "/tool save num"], env)
    assert code == 0 and "Keep draft num v1 as me.num?" in out, (out, err)
    assert not (home / "tenants" / "local" / "global" / "forge" / "tools" / "me.num.py").exists()
    code, out, err = await run(["send", "/tool save num yes"], env)
    assert code == 0 and out.startswith("Saved me.num"), (out, err)
