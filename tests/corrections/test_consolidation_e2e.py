"""Memory that consolidates instead of refusing, end to end through the web API.

A save that meets the memory cap gets a tidy-up proposal from the chat's
(scripted) model, shown with an action to apply it; applying is one journalled
change that `/memory undo` reverts; offline, the reply says how to free space.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bridge.app.build import Roost, build
from bridge.channels.web.channel import WebChannel
from bridge.core.config import load_settings
from bridge.llm.offline import OfflineBackend
from bridge.memory.store import Provenance
from bridge.types.audit_sink import MemoryAudit
from bridge.types.backend import ModelRequest
from tests.conftest import Clock, ScriptedBackend

TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PROV = Provenance("person", "web", "c1", "m0")
SEED = [
    ("coffee", "likes coffee black, no sugar"),
    ("coffee order", "orders a flat white when out, black coffee at home"),
    ("trip 2025", "planned a trip to Lisbon in May 2025 (done)"),
    ("editor", "uses vim with four-space indentation for every project"),
]
PLAN = {
    "merge": [
        {
            "from": ["coffee", "coffee order"],
            "name": "coffee",
            "type": "user",
            "description": "coffee: black at home, flat white out",
            "content": "Black coffee at home, no sugar; a flat white when out.",
        }
    ],
    "drop": ["trip 2025"],
}


async def seeded(roost: Roost, clock: Clock) -> None:
    dirs = roost.tenant_dirs("local")
    memory = roost.loadout.memory
    for name, desc in SEED:
        await memory.save(dirs, name, "user", desc, desc, PROV, clock())


@pytest.fixture
async def started(home: Path, clock: Clock) -> AsyncIterator[tuple[Roost, str, ScriptedBackend]]:
    settings = load_settings(loadout={"memory_chars": 300})
    backend = ScriptedBackend()
    roost = await build(settings, backend=backend, audit=MemoryAudit(), clock=clock)
    await seeded(roost, clock)
    web = WebChannel(roost.core.handle, roost.command_list, TOKEN, "127.0.0.1", 0)
    await web.start()
    try:
        yield roost, f"http://127.0.0.1:{web.port}", backend
    finally:
        await web.stop()
        await roost.aclose()


async def say(http: aiohttp.ClientSession, text: str) -> dict[str, Any]:
    async with http.post("/api/chat", json={"text": text, "chat": "c1"}, headers=AUTH) as r:
        body: dict[str, Any] = await r.json()
        return body


def index(roost: Roost) -> list[str]:
    topics = roost.loadout.memory.store.topics(roost.tenant_dirs("local"))
    return sorted(t.name for t in topics)


async def test_full_memory_proposal_confirm_and_undo(
    started: tuple[Roost, str, ScriptedBackend],
) -> None:
    roost, url, backend = started
    asked: list[ModelRequest] = []

    def plan(request: ModelRequest) -> str:
        asked.append(request)
        return "Here is my proposal:\n" + json.dumps(PLAN)

    backend.steps = [plan]
    before = index(roost)
    async with aiohttp.ClientSession(url) as http:
        full = await say(http, "/remember my sister's birthday is on the 3rd of March, every year")
        assert full["reply"].startswith("Not saved: memory is full [")
        assert "• merge 'coffee', 'coffee order' → 'coffee' (user)" in full["reply"]
        assert "• drop 'trip 2025'" in full["reply"]
        assert "Nothing changes until you apply it" in full["reply"]
        assert index(roost) == before  # shown, not applied
        [action] = full["actions"]
        assert action["label"] == "Apply tidy-up"
        assert "trip to Lisbon" in asked[0].messages[0].content  # the model saw the topics
        done = await say(http, action["command"])
        assert done["reply"].startswith("Memory tidied: 2 topics merged into 1, 1 dropped.")
        assert index(roost) == ["coffee", "editor"]
        again = await say(http, action["command"])
        assert "No tidy-up" in again["reply"]  # applied once
        undone = await say(http, "/memory undo")
        assert undone["reply"].startswith("Undid the tidy-up '2 merged into 1, 1 dropped'.")
        assert index(roost) == before
    [event] = [d for e, _, d in roost.audit.events if e == "memory.consolidated"]
    assert event["merged"] == 2 and event["into"] == 1 and event["dropped"] == 1
    assert event["index_after"] < event["index_before"]


async def test_a_proposal_is_refused_when_memory_changed_meanwhile(
    started: tuple[Roost, str, ScriptedBackend], clock: Clock
) -> None:
    roost, url, backend = started
    backend.steps = [json.dumps(PLAN)]
    async with aiohttp.ClientSession(url) as http:
        proposal = await say(http, "/memory tidy")
        await say(http, "/memory rm editor")
        applied = await say(http, proposal["actions"][0]["command"])
    assert "the memory changed since this proposal" in applied["reply"]
    assert index(roost) == ["coffee", "coffee order", "trip 2025"]


async def test_an_unusable_proposal_changes_nothing(
    started: tuple[Roost, str, ScriptedBackend],
) -> None:
    roost, url, backend = started
    bad = {"merge": [], "drop": ["no such topic"]}
    backend.steps = [json.dumps(bad)]
    async with aiohttp.ClientSession(url) as http:
        reply = await say(http, "/memory tidy")
    assert "could not be used (there is no topic named 'no such topic')" in reply["reply"]
    assert "actions" not in reply
    assert len(index(roost)) == 4


async def test_the_models_full_save_offers_a_tidy_up_action(
    started: tuple[Roost, str, ScriptedBackend],
) -> None:
    _roost, url, backend = started
    save = {"name": "dentist", "type": "user", "description": "dentist on Fridays " * 3}
    save["content"] = "x"
    backend.steps = [[("memory_save", json.dumps(save))], "I could not save that."]
    async with aiohttp.ClientSession(url) as http:
        reply = await say(http, "remember my dentist appointments")
    assert "My memory is full" in reply["reply"]
    assert reply["actions"] == [{"label": "Tidy up memory", "command": "/memory tidy"}]


async def test_offline_says_memory_is_full_and_how_to_free_space(home: Path, clock: Clock) -> None:
    settings = load_settings(loadout={"memory_chars": 300})
    roost = await build(settings, backend=OfflineBackend(), audit=MemoryAudit(), clock=clock)
    try:
        await seeded(roost, clock)
        web = WebChannel(roost.core.handle, roost.command_list, TOKEN, "127.0.0.1", 0)
        await web.start()
        try:
            async with aiohttp.ClientSession(f"http://127.0.0.1:{web.port}") as http:
                reply = await say(http, "/remember the wifi router is in the hallway cupboard")
        finally:
            await web.stop()
    finally:
        await roost.aclose()
    text = reply["reply"]
    assert "memory is full" in text and "No model is configured" in text
    assert "/memory rm <name> deletes one" in text
    assert "actions" not in reply
