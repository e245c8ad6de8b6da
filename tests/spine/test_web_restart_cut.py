"""A web message whose answer a daemon restart cut stays in the chat's history.

The real `roost serve`, the fake model hanging: the page's message runs when
the daemon gets SIGTERM; the drain's grace ends and the turn is cancelled.
After the restart `GET /api/history` (what a reload shows) still holds the
person's message and, as a failed turn, why it was not answered (Retry); the
session stored nothing of it, so the model is never sent a half answer.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp

from tests.fakes.fake_openai import FakeOpenAI, Hang
from tests.grading.judge_fake import is_judge
from tests.spine.test_daemon import env_for, fake, start_daemon  # noqa: F401  (fixture)
from tests.waits import HANG_S, until

QUESTION = "an important long question I typed with care"


async def history(port: int, auth: dict[str, str], chat: str) -> dict[str, Any]:
    async with (
        aiohttp.ClientSession(f"http://127.0.0.1:{port}") as http,
        http.get(f"/api/history?chat={chat}", headers=auth) as r,
    ):
        assert r.status == 200
        page: dict[str, Any] = await r.json()
        return page


async def test_a_turn_cut_by_a_restart_keeps_the_message_and_why(
    home: Path,
    fake: FakeOpenAI,  # noqa: F811
) -> None:
    env = env_for(home, fake)
    daemon = await start_daemon(env)
    auth = {"Authorization": f"Bearer {(home / 'web-token').read_text().strip()}"}
    fake.script(Hang())

    async def streamed() -> str:
        body = {"text": QUESTION, "chat": "rs"}
        async with (
            aiohttp.ClientSession(f"http://127.0.0.1:{daemon.port}") as http,
            http.post("/api/chat/stream", json=body, headers=auth) as r,
        ):
            return (await r.read()).decode()

    page = asyncio.create_task(streamed())
    await until(lambda: fake.requests, "the model asked")
    code, _ = await daemon.stop()
    assert code == 0
    events = await asyncio.wait_for(page, HANG_S)
    assert "roost is stopping" in events  # the open page is told, as before

    daemon = await start_daemon(env)
    try:
        shown = await history(daemon.port, auth, "rs")
        async with aiohttp.ClientSession(f"http://127.0.0.1:{daemon.port}") as http:
            body = {"text": "next", "chat": "rs"}
            async with http.post("/api/chat", json=body, headers=auth) as r:
                assert (await r.json())["reply"] == "echo: next"
    finally:
        await daemon.stop()
    said = [(m["role"], m["text"], m["status"]) for m in shown["messages"]]
    assert [s[:2] for s in said][:1] == [("user", QUESTION)], json.dumps(shown)
    assert len(said) == 2 and said[1][0] == "assistant", json.dumps(shown)
    why = said[1][1]
    assert said[1][2] == "error" and "restarted" in why and "send it again" in why.lower()
    last = [b for b in fake.requests if not is_judge(b)][-1]  # the outcome judge may ask after
    asked = [m["content"] for m in last["messages"] if m["role"] != "system"]
    assert asked[-1] == "next" and not any(QUESTION in a or why in a for a in asked)
