"""What the history shows after a reload: what the person sent (not the model's view of
it), the tool cards, failed turns in their place, a stopped answer marked once; the same
after the conversation is archived. A real web channel over a socket, a real core, the
fake OpenAI server (`served` of test_web_history: alice local, bob with his own token).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp

from tests.fakes.fake_openai import Call, Status, Text, ToolCalls
from tests.spine.test_web_history import AS_ALICE, AS_BOB, Site, chat, get, post, served

NOTE = b"The secret ingredient is cardamom.\n"


async def upload(site: Site, data: bytes, name: str, mime: str) -> str:
    form = aiohttp.FormData()
    form.add_field("file", data, filename=name, content_type=mime)
    async with site.http.post("/api/upload", data=form, headers=AS_ALICE) as r:
        assert r.status == 200, await r.text()
        return str((await r.json())["id"])


async def send(site: Site, body: dict[str, Any]) -> dict[str, Any]:
    async with site.http.post("/api/chat", json={"chat": "c", **body}, headers=AS_ALICE) as r:
        assert r.status == 200, await r.text()
        return dict(await r.json())


def shown(page: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(m["role"], m["text"], m["status"]) for m in page["messages"]]


async def test_history_shows_what_was_typed_with_file_chips_not_the_model_text(
    home: Path,
) -> None:
    async with served(home) as site:
        ident = await upload(site, NOTE, "notes.txt", "text/plain")
        await send(site, {"text": "what is in the file?", "attachments": [ident]})
        assert "cardamom" in site.fake.user_texts()[-1]  # the model read the file
        _, page = await get(site, "/api/history?chat=c")
        asked = page["messages"][0]
        assert asked["text"] == "what is in the file?"
        assert asked["files"] == [
            {"name": "notes.txt", "kind": "document", "mime": "text/plain", "size": len(NOTE)}
        ]
        assert "cardamom" not in str(page["messages"][0])
        _, listed = await get(site, "/api/conversations?chat=c")
        assert listed["conversations"][0]["title"] == "what is in the file?"

        old = page["conversation"]
        await post(site, "/api/chat/new", {"chat": "c"})
        _, archived = await get(site, f"/api/history?chat=c&conversation={old}")
        assert archived["messages"][0]["text"] == "what is in the file?"
        assert archived["messages"][0]["files"][0]["name"] == "notes.txt"


async def test_tool_cards_stay_after_a_reload_and_in_the_archive(home: Path) -> None:
    async with served(home) as site:
        site.fake.script(
            ToolCalls([Call("memory_read", {"name": "nothing_here"}, id="call_1")]),
            Text("There is nothing saved under that name."),
        )
        await chat(site, "what do you remember about nothing_here?")
        _, page = await get(site, "/api/history?chat=c")
        answer = page["messages"][-1]
        assert answer["text"] == "There is nothing saved under that name."
        [card] = answer["tools"]
        assert card["id"] == "call_1" and card["name"] == "memory_read"
        assert card["state"] == "error" and card["result"].startswith("error:")
        assert "nothing_here" in card["args"]
        assert "tools" not in page["messages"][0]

        old = page["conversation"]
        await post(site, "/api/chat/new", {"chat": "c"})
        _, archived = await get(site, f"/api/history?chat=c&conversation={old}")
        assert archived["messages"][-1]["tools"] == [card]


async def test_a_failed_turn_stays_in_its_place_and_never_reaches_the_model(
    home: Path,
) -> None:
    async with served(home) as site:
        await chat(site, "first")
        site.fake.script(Status(400, "the model server refused"))
        reply = await send(site, {"text": "second, which fails"})
        assert reply["kind"] == "error"
        await chat(site, "third")
        assert "second, which fails" not in " ".join(site.fake.user_texts())
        _, page = await get(site, "/api/history?chat=c")
        assert shown(page) == [
            ("user", "first", "done"),
            ("assistant", "echo: first", "done"),
            ("user", "second, which fails", "done"),
            ("assistant", reply["reply"], "error"),
            ("user", "third", "done"),
            ("assistant", "echo: third", "done"),
        ]
        assert page["messages"][2]["seq"] is None and page["messages"][3]["seq"] is None

        # paged: the failure comes with the page of the message it followed
        _, newest = await get(site, "/api/history?chat=c&limit=2")
        assert [m["text"] for m in newest["messages"]] == ["third", "echo: third"]
        before = newest["messages"][0]["seq"]
        _, older = await get(site, f"/api/history?chat=c&limit=2&before={before}")
        assert [m["status"] for m in older["messages"]] == ["done", "done", "done", "error"]

        _, other = await get(site, "/api/history?chat=c", AS_BOB)
        assert other["messages"] == []

        old = page["conversation"]
        await post(site, "/api/chat/new", {"chat": "c"})
        _, archived = await get(site, f"/api/history?chat=c&conversation={old}")
        assert shown(archived) == shown(page)


async def test_a_turn_that_fails_first_is_still_shown(home: Path) -> None:
    async with served(home) as site:
        site.fake.script(Status(400, "no"))
        reply = await send(site, {"text": "hello?"})
        _, page = await get(site, "/api/history?chat=c")
        assert shown(page) == [("user", "hello?", "done"), ("assistant", reply["reply"], "error")]
        assert await chat(site, "again") == "echo: again"
        assert site.fake.user_texts()[-1].endswith("again")
        assert "hello?" not in " ".join(site.fake.user_texts())
