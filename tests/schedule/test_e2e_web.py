"""Proactive messages on the web page: pushed while it is open, listed when it was not.

An in-process roost, the real web channel on 127.0.0.1 and the real
`ScheduleLoop`; the page is an HTTP client reading the event stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from bridge.app.build import Roost
from bridge.app.schedule_loop import ScheduleLoop, wall_ms
from bridge.channels.web.channel import WebChannel
from bridge.schedule.runtime import recent_messages
from tests.masking import m
from tests.waits import HANG_S

TOKEN = "web-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@contextlib.asynccontextmanager
async def page_server(roost: Roost) -> AsyncIterator[tuple[WebChannel, ScheduleLoop]]:
    local = roost.settings.local_tenant
    web = WebChannel(
        roost.core.handle,
        roost.command_list,
        TOKEN,
        "127.0.0.1",
        0,
        recent=lambda chat, after: recent_messages(roost.database, local, "web", chat, after),
    )
    loop = ScheduleLoop(roost)
    await web.start()
    loop.deliveries.add("web", web.deliver)
    loop.start()
    try:
        yield web, loop
    finally:
        await loop.stop()
        await web.stop()


async def remind(roost: Roost, text: str, chat: str = "default") -> None:
    await roost.schedule.jobs.create(
        tenant=roost.settings.local_tenant, channel="web", chat=chat, kind="reminder", spec="",
        payload=m(text), tz="UTC", next_run_ms=wall_ms(), created_ms=wall_ms(),
    )  # fmt: skip
    roost.schedule.changed()


async def events(response: aiohttp.ClientResponse) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    name = ""
    async for raw in response.content:
        line = raw.decode().rstrip("\n")
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            yield name, json.loads(line[6:])


async def test_an_open_page_gets_the_reminder_pushed(roost: Roost) -> None:
    async with page_server(roost) as (web, _), aiohttp.ClientSession() as http:
        url = f"http://127.0.0.1:{web.port}/api/events?chat=default"
        async with http.get(url, headers=AUTH) as response:
            assert response.status == 200
            stream = events(response)
            assert await asyncio.wait_for(anext(stream), HANG_S) == ("ready", {"chat": "default"})
            await remind(roost, "tea is ready")
            await remind(roost, "for another chat", chat="other")
            name, data = await asyncio.wait_for(anext(stream), HANG_S)
    assert name == "message" and data["text"] == "⏰ tea is ready"
    assert data["key"].startswith("job:") and isinstance(data["id"], int)


async def test_a_closed_page_sees_what_it_missed_on_load(roost: Roost) -> None:
    async with page_server(roost) as (web, _), aiohttp.ClientSession() as http:
        await remind(roost, "the oven")
        base = f"http://127.0.0.1:{web.port}/api/outbox"
        listed: list[dict[str, Any]] = []
        deadline = time.monotonic() + HANG_S
        while not listed:  # until the scheduler has run it (a hang guard)
            assert time.monotonic() < deadline, "the reminder was never listed"
            async with http.get(f"{base}?chat=default", headers=AUTH) as response:
                listed = (await response.json())["messages"]
            await asyncio.sleep(0.01)
        assert [m["text"] for m in listed] == ["⏰ the oven"]
        async with http.get(f"{base}?chat=default&after={listed[0]['id']}", headers=AUTH) as r:
            assert (await r.json())["messages"] == []
        async with http.get(f"{base}?chat=other", headers=AUTH) as r:
            assert (await r.json())["messages"] == []


async def test_the_new_endpoints_need_the_token_and_a_known_host(roost: Roost) -> None:
    async with page_server(roost) as (web, _), aiohttp.ClientSession() as http:
        root = f"http://127.0.0.1:{web.port}"
        for path in ("/api/events", "/api/outbox"):
            async with http.get(root + path) as r:
                assert r.status == 401
            async with http.get(root + path, headers={"Authorization": "Bearer wrong"}) as r:
                assert r.status == 401
            async with http.get(root + path, headers={**AUTH, "Host": "evil.example"}) as r:
                assert r.status == 421
            async with http.get(root + path + "?chat=../x", headers=AUTH) as r:
                assert r.status == 400
        async with http.get(root + "/api/outbox?after=-1", headers=AUTH) as r:
            assert r.status == 400


async def test_stopping_with_a_page_listening_ends_its_stream(roost: Roost) -> None:
    async with aiohttp.ClientSession() as http:
        async with page_server(roost) as (web, _):
            url = f"http://127.0.0.1:{web.port}/api/events?chat=default"
            response = await http.get(url, headers=AUTH)
            stream = events(response)
            assert (await asyncio.wait_for(anext(stream), HANG_S))[0] == "ready"
            assert web.deliver.listeners("default") == 1
        # the server stopped (bounded by the hang guard): the stream is over
        rest = [item async for item in stream]
        assert rest == [] and web.deliver.listeners("default") == 0
        response.release()
