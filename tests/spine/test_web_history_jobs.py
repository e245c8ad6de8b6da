"""A web chat with scheduled jobs and slash commands, as a reload shows it.

Over a real socket, the daemon's own web factory, a real core, the real
schedule loop and a fake OpenAI server (it answers "echo: <message>"). Before:
a `/every` job's prompt came back from `/api/history` as the person's message
(the page drew it under "You", with the pencil), its answer came once from the
history and again from the outbox, every proactive post was drawn below the
newest message, the commands and their replies were gone, and a job's post did
not say which job made it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bridge.app.schedule_loop import ScheduleLoop, wall_ms
from bridge.loadout import vault
from forge.library import ToolLibrary, build_spec
from tests.spine.test_web_history import AS_ALICE, AS_BOB, Site, chat, get, served
from tests.waits import until


@asynccontextmanager
async def scheduled(home: Path) -> AsyncIterator[Site]:
    """The served site with the daemon's schedule loop delivering to its web page."""
    async with served(home) as site:
        loop = ScheduleLoop(site.roost)
        loop.deliveries.add("web", site.web.deliver)
        loop.start()
        try:
            yield site
        finally:
            await loop.stop()


async def run_now(site: Site, kind: str) -> str:
    """Run alice's newest job of `kind` now; its id once its post is in the outbox."""
    jobs = await site.roost.schedule.jobs.list_jobs("alice", "web", "c")
    job = max((j for j in jobs if j.kind == kind), key=lambda j: j.created_ms)
    await site.roost.database.execute(
        "UPDATE jobs SET next_run_ms = ? WHERE id = ?", (wall_ms(), job.id)
    )
    site.roost.schedule.changed()

    async def posted() -> bool:
        _, box = await get(site, "/api/outbox?chat=c")
        return any(m["key"].startswith(f"job:{job.id}:") for m in box["messages"])

    await until(posted, f"the post of job {job.id}")
    return job.id


def shown(page: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(role, kind, text) of each message of a history page."""
    return [(m["role"], m.get("kind", ""), m["text"]) for m in page["messages"]]


async def test_a_jobs_run_is_one_post_in_its_place_never_the_persons_message(
    home: Path,
) -> None:
    async with scheduled(home) as site:
        assert await chat(site, "hello") == "echo: hello"
        await chat(site, "/every 5m cron one")
        every = await run_now(site, "turn")
        await chat(site, "/remind in 1h tea is ready")
        remind = await run_now(site, "reminder")
        await chat(site, "a newer message")

        _, page = await get(site, "/api/history?chat=c")
        said = [(r, k, t) for r, k, t in shown(page) if k != "command"]
        assert said == [
            ("user", "", "hello"),
            ("assistant", "", "echo: hello"),
            ("assistant", "proactive", f"🔁 cron one (job {every})\necho: cron one"),
            ("assistant", "proactive", "⏰ tea is ready"),
            ("user", "", "a newer message"),
            ("assistant", "", "echo: a newer message"),
        ]
        posts = [m for m in page["messages"] if m.get("kind") == "proactive"]
        assert [p["seq"] for p in posts] == [None, None]  # no place to edit or regenerate
        assert posts[0]["job"] == every and posts[1]["key"].startswith(f"job:{remind}:")
        _, box = await get(site, "/api/outbox?chat=c")  # what a closed page missed: the same
        assert [m["id"] for m in box["messages"]] == [p["outbox"] for p in posts]
        assert page["newest_post"] == box["messages"][-1]["id"]  # the page listens after it

        # archived by a new chat, the conversation reads the same; the new one has none
        async with site.http.post("/api/chat/new", json={"chat": "c"}, headers=AS_ALICE) as r:
            assert r.status == 200
        _, fresh = await get(site, "/api/history?chat=c")
        assert fresh["messages"] == [] and fresh["newest_post"] == page["newest_post"]
        _, old = await get(site, f"/api/history?chat=c&conversation={page['conversation']}")
        assert shown(old) == shown(page)

        # another tenant's page of the same chat name shows none of it
        _, theirs = await get(site, "/api/history?chat=c", AS_BOB)
        assert theirs["messages"] == [] and theirs["newest_post"] == 0


async def test_commands_and_their_replies_stay_after_a_reload(home: Path) -> None:
    async with scheduled(home) as site:
        made = build_spec("wc", "count words", 'def run() -> str:\n    """T."""\n    return "3"\n')
        assert made.tool is not None
        ToolLibrary(site.roost.tenant_dirs("alice").tools, wall_ms).save(made.tool)
        await chat(site, "hello")
        assert (await chat(site, "/tool rm wc")).startswith("Not removed")
        assert await chat(site, "/tool rm me.wc") == "Removed me.wc."
        confirmed = await chat(site, "/remind in 1h call the dentist")
        await chat(site, "after the commands")

        _, page = await get(site, "/api/history?chat=c")
        assert [(r, k, t[:14]) for r, k, t in shown(page)] == [
            ("user", "", "hello"),
            ("assistant", "", "echo: hello"),
            ("user", "command", "/tool rm wc"),
            ("assistant", "command", "Not removed: /"),
            ("user", "command", "/tool rm me.wc"),
            ("assistant", "command", "Removed me.wc."),
            ("user", "command", "/remind in 1h "),
            ("assistant", "command", confirmed[:14]),
            ("user", "", "after the comm"),
            ("assistant", "", "echo: after th"),
        ]
        replies = [m for m in page["messages"] if m["role"] == "assistant"]
        assert replies[3]["text"] == confirmed  # with the job's id, for /job rm
        # the first offer was taken (its command sent since); the undo still waits
        assert replies[1]["actions"] == [{"label": "Remove me.wc", "command": "/tool rm me.wc"}]
        assert replies[1]["settled"] is True
        undo = {"label": "↩ Undo removing me.wc", "command": "/tool undo me.wc"}
        assert replies[2]["actions"] == [undo] and replies[2]["settled"] is False
        assert all(m["seq"] is None for m in page["messages"] if m.get("kind") == "command")

        # paged back: each command once, on the page of its time
        last = page["messages"][-2]["seq"]
        _, newer = await get(site, "/api/history?chat=c&limit=2")
        _, older = await get(site, f"/api/history?chat=c&before={last}")
        assert [m["text"] for m in older["messages"] + newer["messages"]] == [
            m["text"] for m in page["messages"]
        ]

        # a new chat starts without them; the old conversation keeps them
        old = page["conversation"]
        async with site.http.post("/api/chat/new", json={"chat": "c"}, headers=AS_ALICE) as r:
            assert r.status == 200
        _, fresh = await get(site, "/api/history?chat=c")
        assert fresh["messages"] == []
        _, kept = await get(site, f"/api/history?chat=c&conversation={old}")
        assert [m["text"] for m in kept["messages"]] == [m["text"] for m in page["messages"]]


async def test_a_vaulted_value_in_a_command_is_kept_masked(home: Path) -> None:
    async with scheduled(home) as site:
        vault.set_value(site.roost.tenant_dirs("alice"), "door", "Q7x9-Lmn2-Door")
        await chat(site, "/remind in 1h the door code is Q7x9-Lmn2-Door")
        _, page = await get(site, "/api/history?chat=c")
        assert "Q7x9" not in json.dumps(page, ensure_ascii=False)
        assert "[vault:door]" in page["messages"][0]["text"]
        stored = list((site.home / "tenants" / "alice" / "web" / "commands").glob("*.jsonl"))
        assert len(stored) == 1 and "Q7x9" not in stored[0].read_text()
        assert stored[0].stat().st_mode & 0o077 == 0


async def test_a_transcript_written_before_loads(home: Path) -> None:
    """A chat without a command file (written by an older roost), and a file with a line
    this version does not read (another version's, a cut write): the history loads."""
    async with scheduled(home) as site:
        await chat(site, "/remind in 1h water the plants")
        (path,) = list((site.home / "tenants" / "alice" / "web" / "commands").glob("*.jsonl"))
        path.write_text("not json\n" + '{"conversation": "x"}\n' + path.read_text() + "{")
        _, page = await get(site, "/api/history?chat=c")
        assert page["messages"][0]["text"] == "/remind in 1h water the plants"
        _, none = await get(site, "/api/history?chat=other")
        assert none["messages"] == [] and none["newest_post"] == 0
