"""/remind, /every, /jobs and /job through the real core: replies, stored rows, audit."""

from __future__ import annotations

import json

from bridge.app.build import Roost
from forge.library import ToolLibrary, build_spec
from tests.conftest import Clock
from tests.masking import m
from tests.schedule.sched_helpers import audit_text, berlin, ms_at, say

__all__ = ["berlin"]

NOW_MS = 1_800_000_000_000  # Fri 15 Jan 2027 09:00 in Berlin


async def test_remind_in_english_stores_a_reminder_for_this_chat(berlin: Roost) -> None:
    reply = await say(berlin, "/remind tomorrow 9:00 call the dentist")
    (job,) = await berlin.schedule.jobs.list_jobs("local")
    assert reply == f"⏰ I'll remind you tomorrow, Sat 16 Jan 09:00: call the dentist (id {job.id})"
    assert (job.kind, job.payload, job.spec, job.tz) == (
        "reminder",
        "call the dentist",
        "",
        "Europe/Berlin",
    )
    assert (job.channel, job.chat, job.state) == ("web", "c1", "active")
    assert job.next_run_ms == ms_at("Europe/Berlin", 2027, 1, 16, 9, 0)


async def test_remind_in_german_and_in_minutes(berlin: Roost) -> None:
    reply = await say(berlin, "/remind morgen um 18 Uhr Zahnarzt anrufen")
    assert reply.startswith("⏰ Ich erinnere dich morgen, Sa 16. Jan 18:00: Zahnarzt anrufen (id ")
    reply = await say(berlin, "/remind in 20m take the bread out")
    assert reply.startswith(
        "⏰ I'll remind you in 20 minutes, Fri 15 Jan 09:20: take the bread out"
    )
    by_payload = {j.payload: j for j in await berlin.schedule.jobs.list_jobs("local")}
    assert by_payload["Zahnarzt anrufen"].next_run_ms == ms_at("Europe/Berlin", 2027, 1, 16, 18)
    assert by_payload["take the bread out"].next_run_ms == NOW_MS + 20 * 60_000


async def test_a_time_that_cannot_be_read_is_echoed_and_nothing_is_stored(berlin: Roost) -> None:
    reply = await say(berlin, "/remind whenever you like call mom")
    assert reply.startswith("I could not read a time") and "Try e.g.: in 20m" in reply
    reply = await say(berlin, "/remind yesterday 9:00 call mom")
    assert reply.startswith("That time is not in the future: yesterday")
    reply = await say(berlin, "/remind tomorrow 9:00")
    assert reply.endswith("Usage: /remind <when> <text>")
    assert await berlin.schedule.jobs.list_jobs("local") == []


async def test_limits_refuse_with_their_message(berlin: Roost) -> None:
    reply = await say(berlin, "/every 1m ping the server")
    assert reply.startswith("That runs too often") and "once every 5m" in reply
    for n in range(4):
        assert (await say(berlin, f"/remind in {n + 1}h thing {n}")).startswith("⏰")
    reply = await say(berlin, "/remind in 5h extra thing")
    assert reply == "You have 4 jobs, the most allowed is 4: remove one first (/jobs lists them)."
    assert len(await berlin.schedule.jobs.list_jobs("local")) == 4


async def test_every_makes_a_turn_job_with_its_next_run(berlin: Roost) -> None:
    reply = await say(berlin, "/every weekdays 7:30 summarize my inbox")
    (job,) = await berlin.schedule.jobs.list_jobs("local")
    assert (job.kind, job.payload, job.tz) == ("turn", "summarize my inbox", "Europe/Berlin")
    assert job.spec and job.recurring
    assert job.next_run_ms == ms_at("Europe/Berlin", 2027, 1, 18, 7, 30)  # Monday
    assert "Next run Mon 18 Jan 07:30" in reply and reply.endswith(f"(id {job.id})")
    assert "summarize my inbox" in reply


async def test_every_runs_only_saved_tools_in_the_mode_asked(berlin: Roost) -> None:
    reply = await say(berlin, "/every 1h me.check_site")
    assert reply == "You have no saved tool me.check_site; /tools lists yours."
    save_tool(berlin, "check_site", '"""Check the site."""\n    return "x"')
    await say(berlin, "/every 1h me.check_site")
    await say(berlin, "/every 2h me.check_site always")
    reply = await say(berlin, "/every 3h me.check_site sometimes")
    assert reply == (
        "After me.check_site give its arguments as key=value, then `always` or "
        "`on change` (the default)."
    )
    jobs = sorted(await berlin.schedule.jobs.list_jobs("local"), key=lambda j: j.spec)
    assert [(j.kind, j.spec, json.loads(j.payload)) for j in jobs] == [
        ("tool", "1h", {"tool": "me.check_site", "mode": "change"}),
        ("tool", "2h", {"tool": "me.check_site", "mode": "always"}),
    ]
    assert jobs[0].next_run_ms == NOW_MS + 3_600_000


def save_tool(roost: Roost, name: str, body: str, params: str = "") -> None:
    """A saved tool, as `/tool save` leaves it (source and metadata)."""
    made = build_spec(name, "a test tool", f"def run({params}) -> str:\n    {body}\n")
    assert made.tool is not None, made
    ToolLibrary(roost.tenant_dirs("local").tools, lambda: NOW_MS).save(made.tool)


WEATHER = ("city: str, days: int = 1, metric: bool = True", '"""Weather."""\n    return city')


async def test_a_tool_job_gets_the_arguments_its_tool_requires(berlin: Roost) -> None:
    save_tool(berlin, "weather", WEATHER[1], WEATHER[0])
    reply = await say(berlin, "/every 1h me.weather")
    assert reply.startswith("me.weather takes city: string, days?: integer, metric?: boolean;")
    assert "missing argument 'city'" in reply and "/every 1h me.weather city=…" in reply
    reply = await say(berlin, "/every 1h me.weather city=Berlin days=soon")
    assert "argument 'days' must be integer, got str" in reply
    assert "unknown argument 'town'" in await say(berlin, "/every 1h me.weather town=Rome")
    assert await berlin.schedule.jobs.list_jobs("local") == []  # nothing made without them
    reply = await say(berlin, '/every 2h me.weather city="Bad Homburg" days=3 metric=no always')
    assert 'me.weather city="Bad Homburg" days=3 metric=false, posting its result every' in reply
    (job,) = await berlin.schedule.jobs.list_jobs("local")
    assert json.loads(job.payload) == {
        "tool": "me.weather",
        "mode": "always",
        "args": {"city": "Bad Homburg", "days": 3, "metric": False},
    }
    jobs = await say(berlin, "/jobs")
    assert 'me.weather city="Bad Homburg" days=3' in jobs


async def test_jobs_lists_this_chat_in_the_persons_zone(berlin: Roost, clock: Clock) -> None:
    await say(berlin, "/remind tomorrow 9:00 call the dentist")
    await say(berlin, "/every daily 8:00 what is on today", chat="other")
    await say(berlin, "/profile set timezone America/New_York")
    listing = await say(berlin, "/jobs")
    lines = listing.splitlines()
    assert lines[0] == "Jobs in this chat (times in America/New_York):"
    (job,) = await berlin.schedule.jobs.list_jobs("local", "web", "c1")
    assert lines[1] == (
        f"• {job.id} · reminder · once · next Sat 16 Jan 03:00 · active — call the dentist"
    )
    assert "what is on today" not in listing  # another chat's job
    assert (await say(berlin, "/jobs", chat="empty")).startswith("No jobs in this chat.")


async def test_job_rm_pause_resume_and_errors(berlin: Roost, clock: Clock) -> None:
    await say(berlin, "/every daily 8:00 what is on today")
    (job,) = await berlin.schedule.jobs.list_jobs("local")
    woken: list[int] = []
    berlin.schedule.subscribe(lambda: woken.append(1))
    assert await say(berlin, f"/job pause {job.id}") == f"Job {job.id} paused: what is on today"
    assert " · paused — " in await say(berlin, "/jobs")
    assert "already paused" in await say(berlin, f"/job pause {job.id}")
    clock.advance(3 * 86_400)  # three slots missed while paused
    assert await say(berlin, f"/job resume {job.id}") == f"Job {job.id} resumed: what is on today"
    resumed = await berlin.schedule.jobs.get("local", job.id)
    assert resumed is not None and resumed.state == "active"
    assert resumed.next_run_ms == ms_at("Europe/Berlin", 2027, 1, 19, 8, 0)
    assert await say(berlin, "/job resume zzzzzz") == (
        "There is no job 'zzzzzz'; /jobs lists this chat's jobs."
    )
    assert (await say(berlin, "/job frobnicate")).endswith("Usage: /job show|rm|pause|resume <id>")
    assert (
        await say(berlin, f"/job rm {job.id.upper()}") == f"Job {job.id} removed: what is on today"
    )
    assert await berlin.schedule.jobs.list_jobs("local") == [] and len(woken) == 3
    changed = [d for e, _, d in berlin.audit.events if e == "job.changed"]  # type: ignore[attr-defined]
    assert changed == [
        {"id": job.id, "action": a, "by": "user"} for a in ("paused", "resumed", "removed")
    ]


async def test_delivery_failures_show_in_jobs(berlin: Roost) -> None:
    outbox = berlin.schedule.outbox
    entry = await outbox.enqueue("local", "web", "c1", m("your summary"), "job:k", now_ms=NOW_MS)
    await outbox.claim(NOW_MS)
    await outbox.failed(entry.id, "network", NOW_MS)
    listing = await say(berlin, "/jobs")
    assert "Delivery problems (1):\n  retrying after 1 attempt: network" in listing


async def test_another_tenants_job_ids_are_unknown(berlin: Roost) -> None:
    await say(berlin, "/remind tomorrow 9:00 call the dentist")
    (job,) = await berlin.schedule.jobs.list_jobs("local")
    other = await berlin.schedule.jobs.create(
        tenant="bob", channel="web", chat="c1", kind="reminder", spec="", payload=m("bob's"),
        tz="UTC", next_run_ms=NOW_MS + 60_000, created_ms=NOW_MS,
    )  # fmt: skip
    assert "There is no job" in await say(berlin, f"/job rm {other.id}")
    assert await berlin.schedule.jobs.get("bob", other.id) is not None
    assert job.id in await say(berlin, "/jobs")


async def test_audit_records_ids_and_kinds_never_the_text(berlin: Roost) -> None:
    await say(berlin, "/remind tomorrow 9:00 call the dentist about my tooth")
    await say(berlin, "/every weekdays 7:30 summarize my confidential inbox")
    created = [d for e, _, d in berlin.audit.events if e == "job.created"]  # type: ignore[attr-defined]
    jobs = {j.id: j for j in await berlin.schedule.jobs.list_jobs("local")}
    assert [(d["kind"], d["recurring"], d["channel"], d["by"]) for d in created] == [
        ("reminder", False, "web", "user"),
        ("turn", True, "web", "user"),
    ]
    assert {d["id"] for d in created} == set(jobs)
    text = audit_text(berlin)
    for typed in ("dentist", "tooth", "confidential", "inbox", "7:30", "tomorrow"):
        assert typed not in text
