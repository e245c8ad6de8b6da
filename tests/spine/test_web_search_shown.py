"""Chats search finds what the page shows of a conversation.

`GET /api/conversations/search` read only the session and the archive: it
missed the slash commands sent from the page and their replies, reminders and
scheduled posts, and failed turns, which the page shows (README: "search
(titles and messages)"). Over a real socket, the daemon's web factory, a real
core, the real schedule loop and the fake OpenAI server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes.fake_openai import Status
from tests.spine.test_web_history import AS_ALICE, AS_BOB, Site, chat, get
from tests.spine.test_web_history_failed_jobs import refusing
from tests.spine.test_web_history_jobs import run_now, scheduled


async def found(site: Site, q: str, auth: dict[str, str] = AS_ALICE) -> list[dict[str, Any]]:
    status, body = await get(site, f"/api/conversations/search?chat=c&q={q}", auth)
    assert status == 200, body
    return list(body["results"])


async def on_page(site: Site, q: str, conversation: int | None = None) -> int:
    """How many messages of the conversation's page hold `q` (case folded)."""
    which = "" if conversation is None else f"&conversation={conversation}"
    _, page = await get(site, f"/api/history?chat=c{which}")
    return sum(q.casefold() in str(m["text"]).casefold() for m in page["messages"])


def marked(result: dict[str, Any]) -> str:
    a, b = result["match"]
    return str(result["snippet"][a:b])


async def test_search_finds_commands_posts_and_failed_turns(home: Path) -> None:
    async with scheduled(home) as site:
        site.fake.responder = refusing
        await chat(site, "hello")
        await chat(site, "/remind in 1h web reminder ping")
        await run_now(site, "reminder")
        await chat(site, "/whoami")
        await chat(site, "/nosuch")
        await chat(site, "/every 5m FAIL please")
        job = await run_now(site, "turn")
        site.fake.script(Status(400, "the model server refused"))
        await chat(site, "a question that failed")

        for q, kinds in (
            ("ping", "the reminder's post, its command and reply"),
            ("whoami", "a command and its reply"),
            ("nosuch", "an unknown command and its reply"),
            ("that failed", "the person's failed turn"),
            ("FAIL please", "the command that made the job, its reply, the job's notice"),
        ):
            [hit] = await found(site, q.replace(" ", "%20"))
            assert hit["current"] is True, kinds
            assert hit["hits"] == await on_page(site, q) > 0, kinds
            assert marked(hit).casefold() == q.casefold(), kinds
        [hit] = await found(site, "that%20failed")
        assert hit["seq"] is None and hit["role"] == "user"  # a failed turn has no seq
        [hit] = await found(site, "web%20reminder%20ping")
        assert hit["seq"] is None

        # archived by a new chat, the old conversation is found the same way
        old = hit["conversation"]
        async with site.http.post("/api/chat/new", json={"chat": "c"}, headers=AS_ALICE) as r:
            assert r.status == 200
        for q in ("ping", "whoami", f"job {job}"):
            [hit] = await found(site, q.replace(" ", "%20"))
            assert hit["current"] is False and hit["conversation"] == old
            assert hit["hits"] == await on_page(site, q, old) > 0

        # only the tenant's own chats
        for q in ("ping", "whoami", "nosuch", "failed", "FAIL"):
            assert await found(site, q, AS_BOB) == []


async def test_a_jobs_prompt_the_page_does_not_show_is_not_found(home: Path) -> None:
    """A job's run shows as its post: its prompt, never shown as a message, is found only
    where the page shows it (the command that made the job, the post's header)."""
    async with scheduled(home) as site:
        await chat(site, "/every 5m tell me a zebra fact")
        await run_now(site, "turn")
        [hit] = await found(site, "zebra")
        assert hit["hits"] == await on_page(site, "zebra") == 3  # command, reply, post


def test_only_a_text_that_holds_the_query_is_masked() -> None:
    """Masking every message made a search of a large chat hold the loop (s35 attacker
    F2: 835 ms for 40,000 messages): a text is masked only when it holds the query as
    stored, and a value vaulted since is still never found."""
    from bridge.channels.web.search import hit

    masked: list[str] = []

    def shown(text: str) -> str:
        masked.append(text)
        return text.replace("Q7x9-door", "[vault:door]")

    plain = {"seq": 1, "role": "user", "text": "the weather in Leipzig"}
    assert hit(plain, "berlin", shown) is None and masked == []
    assert hit(plain, "leipzig", shown) == {
        "seq": 1,
        "role": "user",
        "snippet": "the weather in Leipzig",
        "match": [15, 22],
    }
    secret = {"seq": 2, "role": "user", "text": "the code is Q7x9-door"}
    assert hit(secret, "q7x9", shown) is None  # vaulted since: neither found nor counted
    assert masked == [plain["text"], secret["text"]]
