"""The web page's server-side history, over a real socket, a real core and a fake
OpenAI server: paging, past conversations after "new chat" (a real /reset: the
model loses the context), and tenants that see only their own.

The web channel is made by the daemon's own factory (`web_channel`): alice is
the local tenant (the web token), bob signs in with his `[tenants.bob] web_token`.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bridge.app.build import Roost, build
from bridge.app.channels_up import web_channel
from bridge.channels.web.channel import WebChannel
from bridge.core.config import Settings, load_settings
from tests.fakes.fake_openai import FakeOpenAI, Text, ToolCalls

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef"
AS_ALICE = {"Authorization": f"Bearer {ALICE}"}
AS_BOB = {"Authorization": f"Bearer {BOB}"}


class SlowOpenAI(FakeOpenAI):
    """The fake model server, able to hold a streamed answer after `hold_after`
    chunks until `release` is set; `closed` is set when roost drops a stream."""

    def __init__(self) -> None:
        super().__init__(api_key="sk-test", models=["m"])
        self.hold_after: int | None = None
        self.holding = asyncio.Event()
        self.release = asyncio.Event()
        self.closed = asyncio.Event()
        self._written = 0

    async def _stream(
        self, request: web.Request, body: Any, response: Text | ToolCalls
    ) -> web.StreamResponse:
        self._written = 0
        try:
            return await super()._stream(request, body, response)
        except asyncio.CancelledError:  # aiohttp cancels the handler when the client goes
            self.closed.set()
            raise

    async def _write(self, resp: web.StreamResponse, data: bytes) -> None:
        await super()._write(resp, data)
        self._written += 1
        if self.hold_after is not None and self._written == self.hold_after:
            self.holding.set()
            await self.release.wait()

    def user_texts(self, n: int = -1) -> list[str]:
        """The user messages of request `n` (as roost sent them)."""
        return [str(m["content"]) for m in self.requests[n]["messages"] if m["role"] == "user"]


@dataclass
class Site:
    http: aiohttp.ClientSession
    roost: Roost
    web: WebChannel
    fake: SlowOpenAI
    home: Path


def config_text(base_url: str, grace_s: float) -> str:
    return f"""
local_tenant = "alice"
[llm]
provider = "openai"
base_url = "{base_url}"
api_key = "sk-test"
model = "m"
[web]
port = 0
token = "{ALICE}"
detach_grace_s = {grace_s}
[tenants.bob]
web_token = "{BOB}"
"""


def configured(base_url: str, grace_s: float) -> Settings:
    """Settings from the home fixture's config file (ROOST_CONFIG), written now."""
    Path(os.environ["ROOST_CONFIG"]).write_text(config_text(base_url, grace_s))
    return load_settings()


@asynccontextmanager
async def served(home: Path, grace_s: float = 30.0) -> AsyncIterator[Site]:
    async with SlowOpenAI() as fake:
        settings = configured(fake.base_url, grace_s)
        roost = await build(settings)
        web = web_channel(settings, roost, {}).channel
        assert isinstance(web, WebChannel)
        await web.start()
        try:
            async with aiohttp.ClientSession(f"http://127.0.0.1:{web.port}") as http:
                yield Site(http, roost, web, fake, home)
        finally:
            await web.stop()
            await roost.aclose()


async def chat(site: Site, text: str, auth: dict[str, str] = AS_ALICE, chat: str = "c") -> str:
    body = {"text": text, "chat": chat}
    async with site.http.post("/api/chat", json=body, headers=auth) as r:
        assert r.status == 200, await r.text()
        return str((await r.json())["reply"])


async def get(site: Site, path: str, auth: dict[str, str] = AS_ALICE) -> tuple[int, Any]:
    async with site.http.get(path, headers=auth) as r:
        return r.status, (await r.json() if r.status != 204 else None)


async def post(site: Site, path: str, body: Any, auth: dict[str, str] = AS_ALICE) -> Any:
    async with site.http.post(path, json=body, headers=auth) as r:
        assert r.status == 200, await r.text()
        return await r.json()


class Events:
    """An SSE response read one event at a time."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response
        self.seen: list[tuple[str, dict[str, Any]]] = []

    async def next(self) -> tuple[str, dict[str, Any]] | None:
        event, data = "message", []
        async for raw in self.response.content:
            line = raw.decode().rstrip("\r\n")
            if not line:
                if data:
                    self.seen.append((event, json.loads("\n".join(data))))
                    return self.seen[-1]
                event, data = "message", []
            elif line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())
        return None

    async def until(self, name: str) -> dict[str, Any]:
        while (got := await self.next()) is not None:
            if got[0] == name:
                return got[1]
        raise AssertionError(f"the stream ended before a {name!r} event: {self.seen}")

    async def rest(self) -> list[tuple[str, dict[str, Any]]]:
        while await self.next() is not None:
            pass
        return self.seen

    def text(self) -> str:
        return "".join(d["text"] for e, d in self.seen if e == "delta")


async def test_history_pages_backwards_newest_last(home: Path) -> None:
    async with served(home) as site:
        for n in range(1, 4):
            assert await chat(site, f"question {n}") == f"echo: question {n}"
        status, page = await get(site, "/api/history?chat=c&limit=2")
        assert status == 200 and page["more"] is True and page["running"] is False
        assert [(m["role"], m["text"]) for m in page["messages"]] == [
            ("user", "question 3"),
            ("assistant", "echo: question 3"),
        ]
        assert {m["status"] for m in page["messages"]} == {"done"}
        first = page["messages"][0]["seq"]
        _, older = await get(site, f"/api/history?chat=c&limit=3&before={first}")
        assert [m["text"] for m in older["messages"]] == [
            "echo: question 1",
            "question 2",
            "echo: question 2",
        ]
        assert older["more"] is True and older["conversation"] == page["conversation"]
        _, oldest = await get(site, f"/api/history?chat=c&before={older['messages'][0]['seq']}")
        assert [m["text"] for m in oldest["messages"]] == ["question 1"]
        assert oldest["more"] is False
        _, whole = await get(site, "/api/history?chat=c")
        assert len(whole["messages"]) == 6 and whole["messages"][-1]["ts"] > 0
        _, other = await get(site, "/api/history?chat=elsewhere")
        assert other["messages"] == [] and other["more"] is False
        for bad in ("chat=c&limit=x", "chat=c&before=-1", "chat=../x", "chat=c&conversation=²"):
            status, body = await get(site, f"/api/history?{bad}")
            assert status == 400 and body["error"], bad


async def test_new_chat_forgets_for_the_model_and_keeps_the_old_one_readable(home: Path) -> None:
    async with served(home) as site:
        await chat(site, "my cat is called Mira, " + "please remember " * 6)
        await chat(site, "what is my cat called?")
        assert "my cat is called Mira" in " ".join(site.fake.user_texts())
        _, before = await get(site, "/api/history?chat=c")
        old = before["conversation"]

        new = (await post(site, "/api/chat/new", {"chat": "c"}))["conversation"]
        assert new != old
        _, listed = await get(site, "/api/conversations?chat=c")
        rows = listed["conversations"]
        assert [(r["id"], r["current"], r["turns"]) for r in rows] == [
            (new, True, 0),
            (old, False, 2),
        ]
        assert rows[1]["title"] == ("my cat is called Mira, " + "please remember " * 6)[:59] + "…"
        assert rows[1]["started_at"] <= rows[1]["updated_at"]

        _, current = await get(site, "/api/history?chat=c")
        assert current["conversation"] == new and current["messages"] == []
        _, archived = await get(site, f"/api/history?chat=c&conversation={old}")
        assert [m["text"] for m in archived["messages"]] == [m["text"] for m in before["messages"]]
        assert archived["conversation"] == old and archived["running"] is False

        await chat(site, "and now?")
        sent = " ".join(site.fake.user_texts())
        assert "Mira" not in sent and "and now?" in sent  # the model really lost the context
        _, listed = await get(site, "/api/conversations?chat=c")
        assert [r["turns"] for r in listed["conversations"]] == [1, 2]
        assert listed["conversations"][0]["title"] == "and now?"


async def test_another_tenant_sees_nothing_of_alice(home: Path) -> None:
    async with served(home) as site:
        await chat(site, "alice's secret plan")
        await post(site, "/api/chat/new", {"chat": "c"})
        _, alice_list = await get(site, "/api/conversations?chat=c")
        old = alice_list["conversations"][1]["id"]

        _, page = await get(site, "/api/history?chat=c", AS_BOB)
        assert page["messages"] == [] and page["conversation"] != old
        status, body = await get(site, f"/api/history?chat=c&conversation={old}", AS_BOB)
        assert status == 404 and "secret" not in json.dumps(body)
        _, bob_list = await get(site, "/api/conversations?chat=c", AS_BOB)
        assert [r["current"] for r in bob_list["conversations"]] == [True]

        assert await chat(site, "bob here", AS_BOB) == "echo: bob here"
        _, page = await get(site, "/api/history?chat=c", AS_BOB)
        assert [m["text"] for m in page["messages"]] == ["bob here", "echo: bob here"]
        _, alice_page = await get(site, "/api/history?chat=c")
        assert alice_page["messages"] == []  # alice's current conversation: untouched
        sessions = await site.roost.database.fetch_all(
            "SELECT tenant FROM sessions ORDER BY tenant"
        )
        assert sessions == [("bob",)]
        for path in ("/api/history?chat=c", "/api/conversations?chat=c"):
            status, _ = await get(site, path, {"Authorization": "Bearer not-a-token-at-all"})
            assert status == 401


async def test_the_archive_is_pruned_by_count_and_by_age(home: Path) -> None:
    async with served(home) as site:
        archive = site.roost.sessions.archive
        archive.keep_count = 2
        for n in range(4):
            await chat(site, f"conversation {n}")
            await post(site, "/api/chat/new", {"chat": "c"})
        _, listed = await get(site, "/api/conversations?chat=c")
        titles = [r["title"] for r in listed["conversations"]]
        assert titles == ["", "conversation 3", "conversation 2"]
        kept = await site.roost.database.fetch_one("SELECT COUNT(*) FROM conversation_messages")
        assert kept == (4,)  # the pruned conversations' messages went with them

        archive.keep_days = 0  # everything archived before now is too old
        await chat(site, "the newest")
        await post(site, "/api/chat/new", {"chat": "c"})
        _, listed = await get(site, "/api/conversations?chat=c")
        assert [r["title"] for r in listed["conversations"]] == ["", "the newest"]
