"""A saved memory and a scheduled job show under the answer, with a one-tap undo.

Through the core with a scripted model: the `Final` carries the marker line and
an action whose command undoes exactly that change (channel-neutral: the web
shows it as a button, Telegram as an inline button, the terminal as a command).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator

import pytest

from bridge.app.build import Roost, build
from bridge.core.config import Settings
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import Action, Final, Inbound
from tests.conftest import Clock, ScriptedBackend


def said(text: str) -> Inbound:
    return Inbound("web", "local", "c1", text, os.urandom(4).hex())


@pytest.fixture
async def roost(settings: Settings, clock: Clock) -> AsyncIterator[Roost]:
    built = await build(settings, backend=ScriptedBackend(), audit=MemoryAudit(), clock=clock)
    yield built
    await built.aclose()


async def turn(roost: Roost, text: str, *steps: object) -> Final:
    backend = roost.backend
    assert isinstance(backend, ScriptedBackend)
    backend.steps = list(steps)
    return await roost.core.handle(said(text))


def save(name: str, content: str) -> list[tuple[str, str]]:
    args = {"name": name, "type": "user", "description": content, "content": content}
    return [("memory_save", json.dumps(args))]


def names(roost: Roost) -> list[str]:
    return [t.name for t in roost.loadout.memory.store.topics(roost.tenant_dirs("local"))]


async def test_a_saved_memory_is_marked_and_its_undo_reverts_it(roost: Roost) -> None:
    final = await turn(roost, "I take my coffee black", save("coffee", "black"), "Noted.")
    assert final.text == "Noted.\n\n📝 Saved to memory: coffee"
    assert final.actions == (Action("↩ Undo memory 'coffee'", "/memory undo coffee"),)
    assert names(roost) == ["coffee"]
    undone = await roost.core.handle(said(final.actions[0].command))
    assert undone.text.startswith("Undid saving 'coffee'")
    assert names(roost) == []


async def test_an_updated_memory_says_so_and_its_undo_brings_the_old_one_back(
    roost: Roost,
) -> None:
    await turn(roost, "black coffee", save("coffee", "black"), "Noted.")
    final = await turn(roost, "now with milk", save("coffee", "with milk"), "Changed.")
    assert final.text.endswith("📝 Updated memory: coffee")
    await roost.core.handle(said(final.actions[0].command))
    topic = roost.loadout.memory.store.find(roost.tenant_dirs("local"), "coffee")
    assert topic is not None and topic.content == "black"


async def test_an_old_undo_button_reverts_nothing_after_a_later_change(roost: Roost) -> None:
    first = await turn(roost, "black coffee", save("coffee", "black"), "Noted.")
    await turn(roost, "I live in Porto", save("home town", "Porto"), "Noted.")
    refused = await roost.core.handle(said(first.actions[0].command))
    assert "not the latest memory change" in refused.text
    assert sorted(names(roost)) == ["coffee", "home town"]


async def test_a_refused_save_has_no_marker(roost: Roost) -> None:
    secret = save("key", "my api key is sk-proj-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
    final = await turn(roost, "remember my key", secret, "I can't keep that.")
    assert "📝" not in final.text and final.actions == ()
    assert names(roost) == []


async def test_a_scheduled_job_is_marked_and_its_undo_removes_it(roost: Roost) -> None:
    create = [("schedule_create", json.dumps({"when": "in 20m", "text": "tea is ready"}))]
    final = await turn(roost, "remind me about the tea", create, "I will remind you.")
    (job,) = await roost.schedule.jobs.list_jobs("local", "web", "c1")
    assert final.text == f"I will remind you.\n\n⏰ Scheduled: tea is ready (id {job.id})"
    assert final.actions == (Action(f"↩ Undo job {job.id}", f"/job rm {job.id}"),)
    removed = await roost.core.handle(said(final.actions[0].command))
    assert removed.text.startswith(f"Job {job.id} removed")
    assert await roost.schedule.jobs.list_jobs("local", "web", "c1") == []
