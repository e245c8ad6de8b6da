"""A scheduled job whose turn failed, as a reload shows it.

The core kept a failed turn for the page's history (the message, then the
error) for a job's run too, with the job's prompt as the message. The open
page showed only the job's failure notice ("⚠️ job … failed: …"); a reload
showed "You: <the job's prompt>", the error with Retry (which would send the
prompt as if the person typed it), then the notice; and the job's next
failure, which posts no notice, as another message of the person's. The core
now keeps no failed turn of a job's run. Matching such pairs by the job's text
(a first fix) hid the person's own failed messages of the same text (session
35's attacker pass): whatever the person typed always shows.
Over a real socket, the daemon's web factory, a real core, the real schedule
loop and the fake OpenAI server (it refuses every message with FAIL in it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bridge.app.schedule_loop import wall_ms
from tests.fakes.fake_openai import Response, Status, echo_responder, last_user_text
from tests.spine.test_web_history import AS_ALICE, AS_BOB, Site, chat, get
from tests.spine.test_web_history_jobs import run_now, scheduled, shown
from tests.waits import until


def refusing(body: dict[str, Any]) -> Response:
    if "FAIL" in last_user_text(body):
        return Status(400, "the model server refused")
    return echo_responder(body)


async def run_again(site: Site, job: str, failures: int) -> None:
    """Run job `job` now; return once it has failed `failures` times in a row."""
    await site.roost.database.execute(
        "UPDATE jobs SET next_run_ms = ? WHERE id = ?", (wall_ms(), job)
    )
    site.roost.schedule.changed()

    async def failed() -> bool:
        jobs = await site.roost.schedule.jobs.list_jobs("alice", "web", "c")
        return any(j.id == job and j.fail_count >= failures for j in jobs)

    await until(failed, f"job {job} failed {failures} times")


async def test_a_failed_job_turn_is_its_notice_never_the_persons_message(home: Path) -> None:
    async with scheduled(home) as site:
        site.fake.responder = refusing
        assert await chat(site, "hello") == "echo: hello"
        await chat(site, "/every 5m FAIL please")
        job = await run_now(site, "turn")  # its first failure: the notice is posted
        await run_again(site, job, 2)  # again: no notice (the page showed nothing)
        await chat(site, "after the job")
        kept = await site.roost.database.fetch_value("SELECT count(*) FROM failed_turns")
        assert kept == 0  # the core keeps no failed turn of a job's run (the notice says it)

        _, page = await get(site, "/api/history?chat=c")
        said = [(r, k, t.split("\n")[0]) for r, k, t in shown(page) if k != "command"]
        assert said[:2] == [("user", "", "hello"), ("assistant", "", "echo: hello")]
        assert said[3:] == [("user", "", "after the job"), ("assistant", "", "echo: after the job")]
        role, kind, head = said[2]
        assert (role, kind) == ("assistant", "proactive")
        assert head.startswith(f"⚠️ job {job} (FAIL please, every 5m") and "failed" in head
        assert all(m["status"] != "error" for m in page["messages"])  # no Retry anywhere
        notice = next(m for m in page["messages"] if m.get("kind") == "proactive")
        assert notice["job"] == job and notice["seq"] is None
        _, box = await get(site, "/api/outbox?chat=c")  # the one post the open page showed
        assert [m["id"] for m in box["messages"]] == [notice["outbox"]]

        # archived by a new chat, the conversation reads the same
        async with site.http.post("/api/chat/new", json={"chat": "c"}, headers=AS_ALICE) as r:
            assert r.status == 200
        _, old = await get(site, f"/api/history?chat=c&conversation={page['conversation']}")
        assert shown(old) == shown(page)
        assert all(m["status"] != "error" for m in old["messages"])

        # bob's chat of the same name shows nothing of it
        _, theirs = await get(site, "/api/history?chat=c", AS_BOB)
        assert theirs["messages"] == []


async def test_the_persons_own_failed_turn_still_shows_with_retry(home: Path) -> None:
    """A failed turn the person sent stays: their message, then the error (Retry)."""
    async with scheduled(home) as site:
        site.fake.responder = refusing
        await chat(site, "/every 5m FAIL please")
        job = await run_now(site, "turn")
        await chat(site, "FAIL mine, typed")  # the person's own, after the job's notice
        _, page = await get(site, "/api/history?chat=c")
        said = [(m["role"], m.get("kind", ""), m["status"]) for m in page["messages"]]
        assert said[-2:] == [("user", "", "done"), ("assistant", "", "error")]
        assert page["messages"][-2]["text"] == "FAIL mine, typed"
        assert [m.get("job") for m in page["messages"] if m.get("kind") == "proactive"] == [job]


async def test_the_persons_failed_messages_with_a_jobs_text_stay(home: Path) -> None:
    """Typed before and after the job's notice, with the job's own text: both stay,
    each with its error and Retry, and the notice stands on its own."""
    async with scheduled(home) as site:
        site.fake.responder = refusing
        await chat(site, "FAIL check my inbox")
        await chat(site, "/every 5m FAIL check my inbox")
        job = await run_now(site, "turn")
        await chat(site, "FAIL check my inbox")
        _, page = await get(site, "/api/history?chat=c")
        typed = [m for m in page["messages"] if m["text"] == "FAIL check my inbox"]
        assert [(m["role"], m.get("kind", "")) for m in typed] == [("user", ""), ("user", "")]
        errors = [m for m in page["messages"] if m["status"] == "error"]
        assert len(errors) == 2
        assert [m.get("job") for m in page["messages"] if m.get("kind") == "proactive"] == [job]
