"""A job's run in an archived conversation is told by a mark, never by its text.

An archived conversation keeps no msg_id, so its job runs were told by their post's
text (the job's prompt, the answer, a 600 s window). Session 36's attacker pass:
the person typed the job's prompt themselves just before its run (the echo model
answers both alike); after "new chat" the archived conversation showed the job's
post in the place of the person's turn, and the job's prompt and answer as the
person's. The core now keeps the run's msg_id with its stored prompt (its `meta`,
which the archive copies); an archive without any such mark (made by an older
roost) is still read by the text. Over a real socket, the daemon's web factory, a
real core, the real schedule loop and the fake OpenAI server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.spine.test_web_history import AS_ALICE, Site, chat, get
from tests.spine.test_web_history_jobs import run_now, scheduled, shown


async def archive(site: Site) -> dict[str, Any]:
    """The current conversation's page, then the same conversation once archived."""
    _, page = await get(site, "/api/history?chat=c")
    async with site.http.post("/api/chat/new", json={"chat": "c"}, headers=AS_ALICE) as r:
        assert r.status == 200
    _, old = await get(site, f"/api/history?chat=c&conversation={page['conversation']}")
    assert shown(old) == shown(page)  # the archive reads as the page did
    return dict(old)


def turns(page: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(role, kind, first line) of the page's messages, less the commands."""
    return [(r, k, t.split("\n")[0]) for r, k, t in shown(page) if k != "command"]


async def test_the_persons_turn_with_a_jobs_text_stays_theirs_once_archived(
    home: Path,
) -> None:
    async with scheduled(home) as site:
        await chat(site, "/every 5m what is new")
        assert await chat(site, "what is new") == "echo: what is new"  # typed by the person
        job = await run_now(site, "turn")
        old = await archive(site)
        assert turns(old) == [
            ("user", "", "what is new"),  # the person's own turn, where they typed it
            ("assistant", "", "echo: what is new"),
            ("assistant", "proactive", f"🔁 what is new (job {job})"),  # then the run's post
        ]
        mine = [m for m in old["messages"] if m["role"] == "user" and not m.get("kind")]
        assert [isinstance(m["seq"], int) for m in mine] == [True]  # editable, as typed
        post = next(m for m in old["messages"] if m.get("kind") == "proactive")
        assert post["job"] == job and post["text"].endswith("\necho: what is new")


async def test_a_run_whose_prompt_ends_the_page_before_is_still_its_post(home: Path) -> None:
    """The run's prompt on an older page, its answer on this one: still the post."""
    async with scheduled(home) as site:
        await chat(site, "/every 5m tell me news")
        job = await run_now(site, "turn")
        await chat(site, "after the run")
        old = await archive(site)
        seqs = [m["seq"] for m in old["messages"] if isinstance(m["seq"], int)]
        # the page of the run's answer and what follows: the prompt row is before it
        path = f"/api/history?chat=c&conversation={old['conversation']}&before={seqs[-1] + 1}"
        _, newest = await get(site, path + "&limit=3")
        assert turns(newest)[-3:] == [
            ("assistant", "proactive", f"🔁 tell me news (job {job})"),
            ("user", "", "after the run"),
            ("assistant", "", "echo: after the run"),
        ]
        assert all(m["text"] != "tell me news" for m in newest["messages"])


async def test_an_archive_of_an_older_roost_is_still_read_by_the_runs_text(home: Path) -> None:
    """Its runs were stored without the mark: the post still takes the run's place."""
    async with scheduled(home) as site:
        await chat(site, "hello")
        await chat(site, "/every 5m cron one")
        job = await run_now(site, "turn")
        await chat(site, "a newer message")
        _, page = await get(site, "/api/history?chat=c")
        async with site.http.post("/api/chat/new", json={"chat": "c"}, headers=AS_ALICE) as r:
            assert r.status == 200
        db = site.roost.database
        assert await db.execute("UPDATE conversation_messages SET meta = '' WHERE role = 'user'")
        _, old = await get(site, f"/api/history?chat=c&conversation={page['conversation']}")
        assert turns(old) == [
            ("user", "", "hello"),
            ("assistant", "", "echo: hello"),
            ("assistant", "proactive", f"🔁 cron one (job {job})"),
            ("user", "", "a newer message"),
            ("assistant", "", "echo: a newer message"),
        ]


async def test_an_archive_open_during_the_upgrade_reads_its_older_runs_by_text(
    home: Path,
) -> None:
    """Its first run was stored by an older roost (no mark), a later one with it: each
    shows once, as its post (the older one was shown as the person's turn and its post)."""
    async with scheduled(home) as site:
        await chat(site, "hello")
        await chat(site, "/every 5m cron one")
        one = await run_now(site, "turn")
        await chat(site, "/every 7m cron two")
        two = await run_now(site, "turn")
        await chat(site, "a newer message")
        _, page = await get(site, "/api/history?chat=c")
        async with site.http.post("/api/chat/new", json={"chat": "c"}, headers=AS_ALICE) as r:
            assert r.status == 200
        db = site.roost.database
        unmark = "UPDATE conversation_messages SET meta = '' WHERE role = 'user' AND text = ?"
        assert await db.execute(unmark, ("cron one",))
        _, old = await get(site, f"/api/history?chat=c&conversation={page['conversation']}")
        assert turns(old) == [
            ("user", "", "hello"),
            ("assistant", "", "echo: hello"),
            ("assistant", "proactive", f"🔁 cron one (job {one})"),
            ("assistant", "proactive", f"🔁 cron two (job {two})"),
            ("user", "", "a newer message"),
            ("assistant", "", "echo: a newer message"),
        ]
