"""Corrections that stick, end to end through the web API (a real TCP socket on 127.0.0.1).

A standing instruction is offered with two actions; nothing is stored until
the person confirms; `/yes <id>` (what the buttons send) keeps it as a
feedback memory or a steering line, and the next turn's prompt carries it;
a conflicting instruction replaces the older one instead of piling up.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

from bridge.app.build import Roost, build
from bridge.channels.web.channel import WebChannel
from bridge.core.config import Settings
from bridge.types.audit_sink import MemoryAudit
from bridge.types.tenant_dirs import TenantDirs
from tests.conftest import Clock, ScriptedBackend
from tests.spine.test_web import read_sse

TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@dataclass
class Page:
    roost: Roost
    http: aiohttp.ClientSession
    backend: ScriptedBackend
    audit: MemoryAudit

    async def say(self, text: str, chat: str = "c1") -> dict[str, Any]:
        body = {"text": text, "chat": chat}
        async with self.http.post("/api/chat", json=body, headers=AUTH) as r:
            assert r.status == 200
            out: dict[str, Any] = await r.json()
            return out

    @property
    def dirs(self) -> TenantDirs:
        return self.roost.tenant_dirs("local")

    def events(self, name: str) -> list[dict[str, object]]:
        return [d for e, _, d in self.audit.events if e == name]


@pytest.fixture
async def page(settings: Settings, clock: Clock) -> AsyncIterator[Page]:
    backend = ScriptedBackend()
    audit = MemoryAudit()
    roost = await build(settings, backend=backend, audit=audit, clock=clock)
    web = WebChannel(roost.core.handle, roost.command_list, TOKEN, "127.0.0.1", 0)
    await web.start()
    try:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{web.port}") as http:
            yield Page(roost, http, backend, audit)
    finally:
        await web.stop()
        await roost.aclose()


def offer_id(reply: dict[str, Any]) -> str:
    actions = reply["actions"]
    assert [a["label"] for a in actions] == ["Keep as memory", "Keep as steering"]
    oid = actions[0]["command"].split()[1]
    assert actions[0]["command"] == f"/yes {oid}"
    assert actions[1]["command"] == f"/yes {oid} steering"
    return str(oid)


async def test_offer_then_yes_keeps_a_feedback_memory_the_next_prompt_shows(page: Page) -> None:
    page.backend.steps = ["Alles klar.", "Hallo!"]
    reply = await page.say("From now on, always answer in German.")
    assert reply["reply"].startswith("Alles klar.")
    assert (
        "Keep `From now on, always answer in German.` as a standing instruction?"
        in (reply["reply"])
    )
    oid = offer_id(reply)
    assert page.roost.loadout.memory.store.topics(page.dirs) == []  # nothing stored yet

    kept = await page.say(f"/yes {oid}")
    assert kept["kind"] == "command"
    assert kept["reply"].startswith(
        "Kept as a feedback memory ('correction language'): "
        "`From now on, always answer in German.`."
    )
    await page.say("hi")
    system = page.backend.requests[-1].system
    assert "- correction language (feedback): From now on, always answer in German." in system
    assert [d["kind"] for d in page.events("correction.kept")] == ["memory"]
    offered = page.events("correction.offered")[0]
    assert offered["subject"] == "language" and offered["id"] == oid
    assert "German" not in repr(page.audit.events)  # hashes and keys only


async def test_the_stream_final_event_carries_the_actions(page: Page) -> None:
    page.backend.steps = ["Okay."]
    body = {"text": "Bitte nie wieder Emojis.", "chat": "c1"}
    async with page.http.post("/api/chat/stream", json=body, headers=AUTH) as r:
        events = await read_sse(r)
    final = events[-1][1]
    assert events[-1][0] == "final"
    offer_id(final)


async def test_steering_line_and_conflicts_replace_instead_of_piling_up(page: Page) -> None:
    page.backend.steps = ["ok", "ok", "ok"]
    first = offer_id(await page.say("Always answer in German."))
    await page.say(f"/yes {first} steering")
    second = offer_id(await page.say("From now on answer in English please."))
    kept = await page.say(f"/yes {second} steering")
    assert "replacing `Always answer in German.`" in kept["reply"]
    steering = page.dirs.steering.read_text()
    assert "From now on answer in English please." in steering
    assert "German" not in steering
    await page.say("hello")
    system = page.backend.requests[-1].system
    assert "answer in English" in system and "answer in German" not in system
    replaced = page.events("correction.replaced")
    assert len(replaced) == 1 and replaced[0]["subject"] == "language"


async def test_memory_conflict_metric_then_imperial_leaves_one_topic(page: Page) -> None:
    page.backend.steps = ["ok", "ok"]
    await page.say("/yes " + offer_id(await page.say("Please always use metric units.")))
    await page.say("/yes " + offer_id(await page.say("Use imperial units from now on.")))
    topics = page.roost.loadout.memory.store.topics(page.dirs)
    assert [(t.name, t.description) for t in topics] == [
        ("correction units", "Use imperial units from now on.")
    ]


async def test_nothing_is_stored_without_confirmation(page: Page, clock: Clock) -> None:
    page.backend.steps = ["ok", "ok", "ok"]
    oid = offer_id(await page.say("Never use emojis."))
    await page.say("thanks")  # talking on is no consent
    no = await page.say(f"/no {oid}")
    assert no["reply"] == "Not kept. Nothing was stored."
    assert "No offer" in (await page.say(f"/yes {oid}"))["reply"]
    late = offer_id(await page.say("Stop using em dashes."))
    clock.advance(3601)  # offers last an hour
    assert "No offer" in (await page.say(f"/yes {late}"))["reply"]
    elsewhere = offer_id(await page.say("Always use 24-hour time."))
    assert "No offer" in (await page.say(f"/yes {elsewhere}", chat="c2"))["reply"]
    assert page.roost.loadout.memory.store.topics(page.dirs) == []
    assert not page.dirs.steering.exists()
    assert page.events("correction.kept") == []


async def test_ordinary_messages_offer_nothing(page: Page) -> None:
    page.backend.steps = ["ok", "ok"]
    for text in ("I always forget my keys.", "Do you always answer this fast?"):
        reply = await page.say(text)
        assert "actions" not in reply and "standing instruction" not in reply["reply"]
