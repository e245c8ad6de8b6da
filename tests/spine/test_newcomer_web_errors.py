"""The web API's refusals say what to fix (s46 newcomer, findings 1 and 2).

A 400 named pydantic's first complaint without its field (`{"txt": ...}` was "(Field
required)"; a bad `chat` read like a fault of `text`). Each wrong field is now named
with what is wrong, a misspelt one with the nearest field, and nothing the client sent
is shown back but a short plain field name. A 401 now says where a token comes from
(`roost web-token --link`), in one text for every refused token, so it tells nobody
which tenants exist. Over a real socket, as test_web.py.
"""

from __future__ import annotations

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
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
async def http(settings: Settings, clock: Clock) -> AsyncIterator[aiohttp.ClientSession]:
    roost = await build(settings, backend=ScriptedBackend("hi"), audit=MemoryAudit(), clock=clock)
    web = WebChannel(roost.core.handle, roost.command_list, TOKEN, "127.0.0.1", 0)
    await web.start()
    async with aiohttp.ClientSession(f"http://127.0.0.1:{web.port}") as session:
        yield session
    await web.stop()
    await roost.aclose()


async def refusal(http: aiohttp.ClientSession, path: str, body: Any) -> str:
    async with http.post(path, json=body, headers=AUTH) as r:
        assert r.status == 400, await r.text()
        return str((await r.json())["error"])


async def test_a_misspelt_field_is_named_with_the_one_meant(http: aiohttp.ClientSession) -> None:
    said = await refusal(http, "/api/chat", {"txt": "hello"})
    assert said == (
        'send JSON like {"text": "hello"} '
        "(text: missing; txt: not a field here (did you mean text?))"
    )


async def test_a_bad_chat_is_named_as_the_chat_and_not_shown(http: aiohttp.ClientSession) -> None:
    said = await refusal(http, "/api/chat", {"text": "hello", "chat": "Einkäufe"})
    assert said.endswith("(chat: 1-64 of A-Z a-z 0-9 _ -)") and "Einkäufe" not in said


async def test_nothing_sent_is_echoed(http: aiohttp.ClientSession) -> None:
    secret = "sk-live-" + "s3cr3t" * 8
    said = await refusal(http, "/api/chat", {"text": "hi", "quote": [secret]})
    assert "quote: Input should be a valid string" in said and "s3cr3t" not in said
    said = await refusal(http, "/api/chat", {"text": "hi", secret + "x" * 5000: 1})
    assert "a field: not a field here" in said and "s3cr3t" not in said and len(said) < 200
    said = await refusal(http, "/api/chat/stop", {"chat": 5})
    assert said == 'send JSON like {"chat": "default"} (chat: Input should be a valid string)'


async def test_a_401_says_where_the_token_comes_from_the_same_for_everyone(
    http: aiohttp.ClientSession,
) -> None:
    said = set()
    for headers in ({}, {"Authorization": "Bearer not-the-token-000000"}, {"X": "y"}):
        async with http.get("/api/commands", headers=headers) as r:
            assert r.status == 401 and r.headers["WWW-Authenticate"] == "Bearer"
            said.add(str((await r.json())["error"]))
    assert len(said) == 1, said  # one text: nothing about which tokens or tenants exist
    (text,) = said
    assert "`roost web-token --link`" in text and "not-the-token" not in text
