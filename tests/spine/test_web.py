"""The web channel over a real TCP socket on 127.0.0.1."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from bridge.app.build import build
from bridge.channels.web.channel import WebChannel
from bridge.core.config import Settings
from bridge.types.audit_sink import MemoryAudit
from tests.conftest import Clock, ScriptedBackend

TOKEN = "test-token-0123456789"


@pytest.fixture
async def site(settings: Settings, clock: Clock) -> AsyncIterator[Any]:
    backend = ScriptedBackend("Hello **web**, streaming in pieces.", "second answer")
    roost = await build(settings, backend=backend, audit=MemoryAudit(), clock=clock)
    web = WebChannel(roost.core.handle, roost.command_list, TOKEN, "127.0.0.1", 0)
    await web.start()
    async with aiohttp.ClientSession(f"http://127.0.0.1:{web.port}") as http:
        yield http, roost
    await web.stop()
    await roost.aclose()


AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def read_sse(response: aiohttp.ClientResponse) -> list[tuple[str, dict[str, Any]]]:
    events, event, data = [], "message", []
    async for raw in response.content:
        line = raw.decode().rstrip("\r\n")
        if not line:
            if data:
                events.append((event, json.loads("\n".join(data))))
            event, data = "message", []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
    return events


async def test_healthz_and_page_without_token(site: Any) -> None:
    http, _ = site
    async with http.get("/healthz") as r:
        assert r.status == 200 and await r.json() == {"ok": True}
    async with http.get("/") as r:
        assert r.status == 200
        assert "text/html" in r.headers["Content-Type"]
        assert "default-src 'self'" in r.headers["Content-Security-Policy"]
        assert "<script" in await r.text()
    async with http.get("/static/app.js") as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/javascript")
    async with http.get("/static/style.css") as r:
        assert r.headers["Content-Type"].startswith("text/css")
    for hidden in ("package.json", "README.md", "..%2Fpyproject.toml", "test/sse.test.js"):
        async with http.get(f"/static/{hidden}") as r:
            assert r.status == 404, hidden


BAD_AUTH = [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}]


@pytest.mark.parametrize("headers", BAD_AUTH)
async def test_api_needs_the_token(site: Any, headers: dict[str, str]) -> None:
    http, roost = site
    async with http.post("/api/chat", json={"text": "hi"}, headers=headers) as r:
        assert r.status == 401
        assert "token" in (await r.json())["error"]
    async with http.get("/api/commands", headers=headers) as r:
        assert r.status == 401
    assert roost.backend.requests == []


async def test_chat_json(site: Any) -> None:
    http, _ = site
    async with http.post("/api/chat", json={"text": "hi"}, headers=AUTH) as r:
        body = await r.json()
    assert body == {"reply": "Hello **web**, streaming in pieces.", "kind": "answer"}


async def test_stream_deltas_then_final(site: Any) -> None:
    http, _ = site
    async with http.post("/api/chat/stream", json={"text": "hi"}, headers=AUTH) as r:
        assert r.headers["Content-Type"].startswith("text/event-stream")
        events = await read_sse(r)
    deltas = [d["text"] for e, d in events if e == "delta"]
    assert len(deltas) > 1
    assert events[-1] == ("final", {"text": "".join(deltas), "kind": "answer"})


async def test_slash_commands_from_the_page(site: Any) -> None:
    http, _ = site
    async with http.post("/api/chat/stream", json={"text": "/status"}, headers=AUTH) as r:
        events = await read_sse(r)
    assert events[-1][0] == "final" and events[-1][1]["kind"] == "command"
    assert "Tenant: local" in events[-1][1]["text"]
    async with http.get("/api/commands", headers=AUTH) as r:
        names = [c["name"] for c in (await r.json())["commands"]]
    assert {"help", "reset", "status", "whoami"} <= set(names)


async def test_chats_are_separate_conversations(site: Any) -> None:
    http, roost = site
    await http.post("/api/chat", json={"text": "one", "chat": "a"}, headers=AUTH)
    await http.post("/api/chat", json={"text": "two", "chat": "b"}, headers=AUTH)
    assert [m.content for m in roost.backend.requests[1].messages][1:] == ["two"]


@pytest.mark.parametrize(
    "body",
    [b"not json", b'{"txt": "hi"}', b'{"text": 5}', b'{"text": "hi", "chat": "../etc"}'],
)
async def test_bad_requests_get_a_clear_400(site: Any, body: bytes) -> None:
    http, roost = site
    async with http.post("/api/chat", data=body, headers=AUTH) as r:
        assert r.status == 400
        assert '{"text": "hello"}' in (await r.json())["error"]
    assert roost.backend.requests == []


async def test_oversize_message_and_body(site: Any) -> None:
    http, _ = site
    async with http.post("/api/chat", json={"text": "x" * 20_000}, headers=AUTH) as r:
        body = await r.json()
    assert body["kind"] == "error" and "limit is 16,000" in body["reply"]
    async with http.post("/api/chat", data=io.BytesIO(b"x" * (2 * 1024 * 1024)), headers=AUTH) as r:
        assert r.status == 413
