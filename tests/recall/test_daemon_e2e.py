"""Recall through the running roost: turns on the web page and on Telegram are indexed, and
the model's `recall` tool call (the fake OpenAI server scripts it) finds both.

The real python-telegram-bot talks to the fake Bot API, the web channel listens
on 127.0.0.1, the OpenAI backend streams from the fake OpenAI server; the
person is one tenant on both channels (the local tenant is `alice`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp

from bridge.channels.web.channel import WebChannel
from bridge.core.config import load_settings
from bridge.llm.openai import OpenAIBackend
from tests.fakes.fake_openai import Call, FakeOpenAI, Text, ToolCalls
from tests.telegram.conftest import ALICE, TOKEN, running
from tests.telegram.fake_bot_api import FakeBotAPI

API_KEY = "sk-test-key-000000000000"
WEB_TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {WEB_TOKEN}"}


def tool_results(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m.get("role") == "tool"]


async def test_recall_tool_finds_earlier_web_and_telegram_turns(home: Path) -> None:
    async with (
        FakeOpenAI(api_key=API_KEY, models=["m1"]) as model,
        FakeBotAPI(TOKEN, max_poll_s=2.0) as fake,
    ):
        settings = load_settings(
            home=home,
            local_tenant="alice",
            telegram={"token": TOKEN, "api_base_url": fake.base_url},
            tenants={"alice": {"telegram_ids": [ALICE]}},
        )
        backend = OpenAIBackend(model.base_url, API_KEY, "m1", max_retries=0)
        async with running(settings, fake, backend) as run:
            web = WebChannel(
                run.roost.core.handle, run.roost.command_list, WEB_TOKEN, "127.0.0.1", 0
            )
            await web.start()
            try:
                async with aiohttp.ClientSession(f"http://127.0.0.1:{web.port}") as http:

                    async def say(text: str) -> str:
                        body = {"text": text, "chat": "c1"}
                        async with http.post("/api/chat", json=body, headers=AUTH) as r:
                            assert r.status == 200
                            return str((await r.json())["reply"])

                    model.script(Text("Noted."))
                    await say("My daughter's violin teacher is called Ms Okonkwo.")
                    model.script(Text("Sounds lovely."))
                    fake.push_text(ALICE, "We booked the ferry to Naxos for the third of June.")
                    await fake.wait_until(
                        lambda: any("Sounds lovely" in m.text for m in fake.sent_to(ALICE))
                    )
                    model.script(
                        ToolCalls([Call("recall", {"query": "violin teacher"})]),
                        ToolCalls([Call("recall", {"query": "ferry booked", "k": 3})]),
                        Text("Ms Okonkwo, and the ferry goes to Naxos."),
                    )
                    reply = await say("Remind me: the violin teacher's name, and the ferry?")
                    assert reply == "Ms Okonkwo, and the ferry goes to Naxos."
            finally:
                await web.stop()
            first, second = tool_results(model.requests[-2]), tool_results(model.requests[-1])
            assert "Ms Okonkwo" in first[0] and "web:c1" in first[0]
            assert "Naxos" in second[-1] and f"telegram:{ALICE}" in second[-1]
            assert "Sounds lovely." in second[-1]  # the turn around the hit: the answer after it
            system = model.requests[-1]["messages"][0]["content"]
            assert "recall" in system  # the base prompt says when to recall
            searched = [d for e, _, d in run.audit.events if e == "recall.searched"]
            assert [d["by"] for d in searched] == ["model", "model"]
            assert all("violin" not in json.dumps(d) for d in searched)  # counts, never the query
            tools = {t["function"]["name"] for t in model.requests[-1]["tools"]}
            assert "recall" in tools
