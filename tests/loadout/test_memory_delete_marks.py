"""A memory the model deletes shows under the answer, with an undo of that very deletion.

Found by an attacker's pass: the model (prompt-injected by a file) called
`memory_delete {"name": "gym locker"}` and answered something unrelated. The reply
had no notice and no undo, and a later save became the newest journal entry, so
its "↩ Undo memory" button no longer reached the deletion. Now a deletion adds
"🗑 Deleted from memory: <name>" and an action `/memory undo #<ref>` that brings
back that deletion even after later changes; a save that removes other topics on
the same subject names them. Through the real core with a scripted model.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from bridge.core.config import Settings
from bridge.types.messages import Action, Final
from tests.conftest import ScriptedBackend
from tests.loadout.conftest import inbound
from tests.waits import until

UNDO = re.compile(r"/memory undo #[0-9a-f]{8}")


def save(name: str, description: str, content: str = "") -> list[tuple[str, str]]:
    args = {
        "name": name,
        "type": "user",
        "description": description,
        "content": content or description,
    }
    return [("memory_save", json.dumps(args))]


def delete(name: str) -> list[tuple[str, str]]:
    return [("memory_delete", json.dumps({"name": name}))]


def names(roost: Any) -> list[str]:
    return [t.name for t in roost.loadout.memory.store.topics(roost.tenant_dirs("local"))]


def events(roost: Any, name: str) -> list[dict[str, object]]:
    return [d for e, _, d in roost.audit.events if e == name]


async def test_a_deletion_is_marked_and_its_undo_reaches_it_after_a_later_save(
    settings: Settings, make_roost: Any
) -> None:
    roost = await make_roost(
        settings,
        save("gym locker", "gym locker code is 4711"),
        "Noted.",
        delete("gym locker"),
        "Berlin: sunny, 21 °C.",
        save("coffee", "takes coffee black"),
        "Noted.",
    )

    async def say(text: str) -> Final:
        final: Final = await roost.core.handle(inbound(text))
        return final

    await say("my gym locker code is 4711")
    final = await say("what is the weather?")  # the model deletes and does not mention it
    assert final.text == "Berlin: sunny, 21 °C.\n\n🗑 Deleted from memory: gym locker"
    (undo,) = final.actions
    assert undo.label == "↩ Undo deleting 'gym locker'" and UNDO.fullmatch(undo.command)
    assert names(roost) == []
    assert events(roost, "memory.deleted") == [
        {"name": "gym locker", "type": "user", "chars": 23, "by": "model"}
    ]

    later = await say("I take my coffee black")  # now the newest memory change
    assert later.actions == (Action("↩ Undo memory 'coffee'", "/memory undo coffee"),)

    restored = await say(undo.command)
    assert restored.text.startswith("Undid deleting 'gym locker'")
    assert names(roost) == ["coffee", "gym locker"]  # the later save stays
    assert events(roost, "memory.undone") == [{"name": "gym locker", "op": "delete", "files": 1}]
    assert (await say(undo.command)).text.startswith("Nothing to undo: that change was undone")
    assert (await say("/memory undo")).text.startswith("Undid saving 'coffee'")
    assert names(roost) == ["gym locker"]


async def test_a_deletion_is_not_undone_over_a_topic_of_its_name_made_since(
    settings: Settings, make_roost: Any
) -> None:
    roost = await make_roost(
        settings,
        save("gym locker", "gym locker code is 4711"),
        "Noted.",
        delete("gym locker"),
        "ok",
        save("gym locker", "gym locker code is 0815"),
        "Noted.",
    )

    async def say(text: str) -> Final:
        final: Final = await roost.core.handle(inbound(text))
        return final

    await say("my gym locker code is 4711")
    (undo,) = (await say("hi")).actions
    await say("the new code is 0815")
    refused = await say(undo.command)
    assert refused.text.startswith("Not restored: there is a memory 'gym locker' again")
    assert (
        "0815" in roost.loadout.memory.store.find(roost.tenant_dirs("local"), "gym locker").content
    )
    assert (await say("/memory rm gym locker")).text.startswith("Forgot 'gym locker'")
    assert (await say(undo.command)).text.startswith("Undid deleting 'gym locker'")
    topic = roost.loadout.memory.store.find(roost.tenant_dirs("local"), "gym locker")
    assert topic is not None and "4711" in topic.content


async def test_a_save_that_replaces_topics_on_its_subject_names_them(
    settings: Settings, make_roost: Any
) -> None:
    roost = await make_roost(
        settings,
        save("home town", "lives in Leipzig"),
        "ok",
        save("where I live", "moved to Hamburg in May"),
        "ok",
    )
    await roost.core.handle(inbound("I live in Leipzig"))
    final = await roost.core.handle(inbound("I moved to Hamburg"))
    assert final.text == "ok\n\n📝 Updated memory: where I live (replaces 'home town')"
    assert (
        "It replaced 'home town' (the same subject)."
        in roost.backend.requests[-1].messages[-1].content
    )
    assert names(roost) == ["where I live"]
    undone = await roost.core.handle(inbound(final.actions[0].command))
    assert undone.text.startswith("Undid saving 'where I live'")
    assert names(roost) == ["home town"]


async def test_a_turn_stopped_after_a_save_says_the_save_and_offers_its_undo(
    settings: Settings, make_roost: Any
) -> None:
    """The person presses Stop while the model's second step runs: the memory its first
    step saved stays, so the stopped reply says so and offers the undo (it said
    nothing, and only `/memory undo` could find it)."""

    def hang(request: object) -> str:
        backend.delay = 300.0  # this step never ends on its own: the person stops it
        return "never shown"

    roost = await make_roost(settings, save("coffee", "takes coffee black"), hang)
    backend = roost.backend
    assert isinstance(backend, ScriptedBackend)
    turn = asyncio.ensure_future(roost.core.handle(inbound("I take my coffee black")))
    await until(lambda: len(backend.requests) == 2, "the model's second step")
    stop = await roost.core.handle(inbound("/stop"))
    assert stop is None or stop.kind == "silent"
    final: Final = await turn
    assert final.kind == "stopped"
    assert final.text == "[stopped]\n\n📝 Saved to memory: coffee"
    assert final.actions == (Action("↩ Undo memory 'coffee'", "/memory undo coffee"),)
    assert names(roost) == ["coffee"]
