"""The offline answer (no model configured) is shown, never sent to a model or graded later.

A newcomer (s35 N8) sent "hello offline" before configuring a model and got the
offline backend's help text; once `[llm]` was written (a running roost reloads
the file on its own), the next model request carried that help text as an
assistant turn, and the grading judge was asked to grade "Request: hello
offline / Answer: No model is configured…". The core now tells the offline
backend by its name (never by the answer's text, which a model or a person
could write too) and keeps its answer for the page only, as a failed turn is.
Over a real socket: the daemon's web factory, a real core on the offline
backend, the daemon's own reload hooks, then the fake OpenAI server.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest

from bridge.app.build import Roost, build
from bridge.app.channels_up import web_channel
from bridge.app.live import reload_hooks
from bridge.channels.web.channel import WebChannel
from bridge.core.config import load_settings
from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_web_history import ALICE, AS_ALICE

OFFLINE_HEAD = "No model is configured"
WEB = f'local_tenant = "alice"\n[web]\nport = 0\ntoken = "{ALICE}"\n'


def write_config(text: str) -> None:
    Path(os.environ["ROOST_CONFIG"]).write_text(text)


async def say(http: aiohttp.ClientSession, text: str) -> str:
    async with http.post("/api/chat", json={"text": text, "chat": "c"}, headers=AS_ALICE) as r:
        assert r.status == 200, await r.text()
        return str((await r.json())["reply"])


@asynccontextmanager
async def offline_site() -> AsyncIterator[tuple[Roost, aiohttp.ClientSession]]:
    """The daemon's web channel over a real core with no model configured (the offline
    backend), and a client of it."""
    write_config(WEB)  # no [llm]: the offline backend
    roost = await build(load_settings())
    web = web_channel(load_settings(), roost, {}).channel
    assert isinstance(web, WebChannel)
    await web.start()
    try:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{web.port}") as http:
            yield roost, http
    finally:
        await web.stop()
        await roost.aclose()


def configure_model(roost: Roost, fake: FakeOpenAI) -> None:
    """`[llm]` written to the file and applied as the running daemon applies it."""
    llm = f'[llm]\nprovider = "openai"\nbase_url = "{fake.base_url}"\n'
    write_config(WEB + llm + 'api_key = "sk-test"\nmodel = "m"\n')
    new = load_settings()
    for hook in reload_hooks(roost):
        hook.apply(new)


async def test_the_offline_answer_is_shown_but_never_sent_to_the_model_or_graded(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROOST_GRADING__JUDGE_DAILY_CAP", "100")  # the judge is on
    async with offline_site() as (roost, http), FakeOpenAI(api_key="sk-test", models=["m"]) as fake:
        offline = await say(http, "hello offline")
        assert offline.startswith(OFFLINE_HEAD)  # the person is told how to set one up

        configure_model(roost, fake)
        asked = "now with a model: can you tell me a joke?"
        assert await say(http, asked) == f"echo: {asked}"
        await roost.judge.drain()  # a judge request would have been made by now

        sent = fake.requests[0]["messages"]
        assert not any(OFFLINE_HEAD in str(m.get("content")) for m in sent)
        assert [m["role"] for m in sent if m["role"] != "system"][-1:] == ["user"]
        assert not any(m["role"] == "assistant" for m in sent)
        assert "hello offline" not in str(sent)  # the offline turn is no context
        assert len(fake.requests) == 1  # the turn only: the judge was never asked

        async with http.get("/api/history?chat=c", headers=AS_ALICE) as r:
            page = await r.json()
        said = [(m["role"], m["text"]) for m in page["messages"]]
        assert said == [  # what the person saw, in its place
            ("user", "hello offline"),
            ("assistant", offline),
            ("user", asked),
            ("assistant", f"echo: {asked}"),
        ]
        assert [m["seq"] is None for m in page["messages"]] == [True, True, False, False]


async def test_a_new_chat_clears_a_conversation_of_offline_answers_only(home: Path) -> None:
    """No turn of it was stored (no session row), yet "new chat" archives what the page
    showed and starts an empty one, as for any conversation (session 36's attacker F1:
    the offline answers stayed in the current conversation, and came back on a reload)."""
    async with offline_site() as (_, http):
        for text in ("first try", "second try"):
            assert (await say(http, text)).startswith(OFFLINE_HEAD)
        async with http.get("/api/history?chat=c", headers=AS_ALICE) as r:
            before = await r.json()
        assert len(before["messages"]) == 4
        assert (await say(http, "/reset")).startswith("Started a fresh conversation")
        async with http.get("/api/history?chat=c", headers=AS_ALICE) as r:
            after = await r.json()
        assert after["conversation"] != before["conversation"]
        assert [m for m in after["messages"] if m.get("kind") != "command"] == []
        async with http.get("/api/conversations?chat=c", headers=AS_ALICE) as r:
            listed = (await r.json())["conversations"]
        archived = [c for c in listed if not c["current"]]
        assert [c["title"] for c in archived] == ["first try"]
        query = f"/api/history?chat=c&conversation={archived[0]['id']}"
        async with http.get(query, headers=AS_ALICE) as r:
            kept = await r.json()
        assert [(m["role"], m["text"][:9]) for m in kept["messages"]] == [
            ("user", "first try"),
            ("assistant", OFFLINE_HEAD[:9]),
            ("user", "second tr"),
            ("assistant", OFFLINE_HEAD[:9]),
        ]


async def final_event(http: aiohttp.ClientSession, text: str) -> dict[str, object]:
    async with http.post(
        "/api/chat/stream", json={"text": text, "chat": "c"}, headers=AS_ALICE
    ) as r:
        assert r.status == 200, await r.text()
        lines = [ln for ln in (await r.text()).splitlines() if ln.startswith("data:")]
    body = json.loads(lines[-1].removeprefix("data:"))
    assert isinstance(body, dict)
    return body


async def test_the_streamed_final_says_the_offline_answer_was_not_stored(home: Path) -> None:
    """The page gives a stored turn its place after it ends (js/chat_history.js `sync`);
    the offline answer is not stored, and its final event says so (`unstored`), so the
    page does not give it the place of the stored answer before it. A stored answer's
    final has no such key."""
    async with offline_site() as (roost, http), FakeOpenAI(api_key="sk-test", models=["m"]) as fake:
        offline = await final_event(http, "hello offline")
        assert str(offline["text"]).startswith(OFFLINE_HEAD) and offline["unstored"] is True
        configure_model(roost, fake)
        stored = await final_event(http, "and now?")
        assert stored["text"] == "echo: and now?" and "unstored" not in stored
