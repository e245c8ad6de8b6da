"""The one-tap offers under a model answer, as a reload shows them.

An answer may offer buttons: "Keep as memory" / "Keep as steering" (`/yes <id>`)
after a standing instruction, "↩ Undo memory 'x'" after a memory_save. Before,
`/api/history` gave `actions` only to slash-command replies: after a reload the
buttons were gone, an offer still waiting could not be taken from the page and
one already taken did not show as taken. Over a real socket, the daemon's web
factory, a real core and the fake OpenAI server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bridge.loadout import vault
from tests.fakes.fake_openai import Call, Text, ToolCalls
from tests.spine.test_web_history import AS_ALICE, AS_BOB, Site, chat, get, post, served


async def said(site: Site, text: str) -> dict[str, Any]:
    """The live reply to `text` from the page: {reply, kind, actions?}."""
    return dict(await post(site, "/api/chat", {"text": text, "chat": "c"}))


def answers(page: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in page["messages"] if m["role"] == "assistant" and not m.get("kind")]


async def test_an_answers_offers_come_back_and_show_as_taken(home: Path) -> None:
    async with served(home) as site:
        offered = await said(site, "from now on always answer in German")
        assert [a["label"] for a in offered["actions"]] == ["Keep as memory", "Keep as steering"]
        await chat(site, "an answer without offers")
        args = {"name": "gym", "type": "user", "description": "gym days", "content": "Mon, Thu"}
        site.fake.script(ToolCalls([Call("memory_save", args)]), Text("Saved."))
        undo = await said(site, "remember my gym days")
        assert [a["label"] for a in undo["actions"]] == ["↩ Undo memory 'gym'"]

        _, page = await get(site, "/api/history?chat=c")
        first, plain, saved = answers(page)
        assert first["actions"] == offered["actions"] and first["settled"] is False
        assert "actions" not in plain
        assert saved["actions"] == undo["actions"] and saved["settled"] is False
        assert isinstance(first["seq"], int)  # the answer itself, not a copy

        # taken from the page: the offer shows as taken; the other one still waits
        await chat(site, offered["actions"][0]["command"])
        _, page = await get(site, "/api/history?chat=c")
        first, _, saved = answers(page)
        assert first["actions"] == offered["actions"] and first["settled"] is True
        assert saved["settled"] is False

        # a page of the newest two messages: the answer on it keeps its offer
        _, newest = await get(site, "/api/history?chat=c&limit=2")
        assert answers(newest)[-1]["actions"] == undo["actions"]

        # archived by a new chat, the conversation keeps them
        async with site.http.post("/api/chat/new", json={"chat": "c"}, headers=AS_ALICE) as r:
            assert r.status == 200
        _, old = await get(site, f"/api/history?chat=c&conversation={page['conversation']}")
        assert [(a.get("actions"), a.get("settled")) for a in answers(old)] == [
            (a.get("actions"), a.get("settled")) for a in answers(page)
        ]
        _, theirs = await get(site, "/api/history?chat=c", AS_BOB)
        assert theirs["messages"] == []


async def test_an_offer_reads_masked_once_its_value_is_vaulted(home: Path) -> None:
    """An offer's label names what was saved: vaulted later, it reads masked after a reload
    (as every text of the history does)."""
    async with served(home) as site:
        args = {"name": "Q7x9-Lmn2-Door", "type": "user", "description": "d", "content": "c"}
        site.fake.script(ToolCalls([Call("memory_save", args)]), Text("Saved."))
        live = await said(site, "remember the door")
        assert "Q7x9" in json.dumps(live["actions"])
        vault.set_value(site.roost.tenant_dirs("alice"), "door", "Q7x9-Lmn2-Door")
        _, page = await get(site, "/api/history?chat=c")
        (answer,) = answers(page)
        assert answer["actions"] and "Q7x9" not in json.dumps(page, ensure_ascii=False)
        assert "[vault:door]" in answer["actions"][0]["command"]


async def test_a_regenerated_answers_offers_come_back(home: Path) -> None:
    """An answer asked again (regenerate, edit) goes through the page's handle too."""
    from tests.spine.test_web_chats import stream

    async with served(home) as site:
        await chat(site, "remember my gym days")
        _, page = await get(site, "/api/history?chat=c")
        (first,) = answers(page)
        args = {"name": "gym", "type": "user", "description": "gym days", "content": "Mon, Thu"}
        site.fake.script(ToolCalls([Call("memory_save", args)]), Text("Saved."))
        status, final = await stream(
            site, "/api/chat/regenerate", {"chat": "c", "seq": first["seq"]}
        )
        assert status == 200 and [a["label"] for a in final["actions"]] == ["↩ Undo memory 'gym'"]
        _, page = await get(site, "/api/history?chat=c")
        (again,) = answers(page)
        assert again["text"].startswith("Saved.") and again["actions"] == final["actions"]
