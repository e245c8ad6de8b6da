"""The model's schedule_create / schedule_list, through a scripted model call."""

from __future__ import annotations

import json

from bridge.app.build import Roost
from tests.conftest import ScriptedBackend
from tests.schedule.sched_helpers import audit_text, berlin, ms_at, say

__all__ = ["berlin"]


def script(roost: Roost, *steps: object) -> ScriptedBackend:
    backend = roost.backend
    assert isinstance(backend, ScriptedBackend)
    backend.steps = list(steps)
    return backend


def tool_results(backend: ScriptedBackend) -> list[str]:
    """This turn's tool results (the session also resends earlier turns' steps)."""
    messages = list(backend.requests[-1].messages)
    last_user = max(i for i, m in enumerate(messages) if m.role == "user")
    return [m.content for m in messages[last_user:] if m.role == "tool"]


async def test_the_model_schedules_a_reminder_and_is_told_to_confirm(berlin: Roost) -> None:
    args = {"when": "tomorrow 18:00", "text": "water the plants"}
    backend = script(berlin, [("schedule_create", json.dumps(args))], "Done, I will remind you.")
    reply = await say(berlin, "remind me to water the plants tomorrow evening")
    assert {"schedule_create", "schedule_list"} <= {t.name for t in backend.requests[0].tools}
    (job,) = await berlin.schedule.jobs.list_jobs("local", "web", "c1")
    assert reply == f"Done, I will remind you.\n\n⏰ Scheduled: water the plants (id {job.id})"
    assert (job.kind, job.payload, job.spec) == ("reminder", "water the plants", "")
    assert job.next_run_ms == ms_at("Europe/Berlin", 2027, 1, 16, 18, 0)
    assert tool_results(backend) == [
        "Scheduled. Tell the person: ⏰ I'll remind you tomorrow, Sat 16 Jan 18:00: "
        f"water the plants (id {job.id})"
    ]
    created = [d for e, _, d in berlin.audit.events if e == "job.created"]  # type: ignore[attr-defined]
    assert created == [
        {"id": job.id, "kind": "reminder", "recurring": False, "channel": "web", "by": "model"}
    ]
    assert "plants" not in audit_text(berlin)


async def test_a_recurring_turn_and_the_list(berlin: Roost) -> None:
    args = {"every": "weekdays 7:30", "text": "brief me on my calendar", "kind": "turn"}
    backend = script(
        berlin, [("schedule_create", json.dumps(args))], "ok", [("schedule_list", "{}")], "ok"
    )
    await say(berlin, "every weekday morning brief me")
    (job,) = await berlin.schedule.jobs.list_jobs("local")
    assert (job.kind, job.payload, job.recurring) == ("turn", "brief me on my calendar", True)
    assert "Next run Mon 18 Jan 07:30" in tool_results(backend)[0]
    await say(berlin, "what is scheduled?")
    (listing,) = tool_results(backend)
    assert listing.splitlines()[1].startswith(
        f"- {job.id}: turn, cron 30 7 * * 1,2,3,4,5 (Europe/Berlin)"
    )
    assert "next Mon 18 Jan 07:30, active: brief me on my calendar" in listing


async def test_refusals_reach_the_model_and_store_nothing(berlin: Roost) -> None:
    calls = [
        {"when": "whenever", "text": "x"},
        {"when": "tomorrow 9:00 and then some", "text": "x"},
        {"when": "tomorrow 9:00", "every": "daily 9:00", "text": "x"},
        {"every": "1m", "text": "x"},
        {"when": "tomorrow 9:00", "text": "x", "kind": "tool"},
        {"when": "tomorrow 9:00", "text": ""},
    ]
    steps: list[object] = []
    for args in calls:
        steps += [[("schedule_create", json.dumps(args))], "ok"]
    backend = script(berlin, *steps)
    results = []
    for n in range(len(calls)):
        await say(berlin, f"try {n}")
        results += tool_results(backend)
    assert results[0].startswith("error: I could not read a time")
    assert results[1] == "error: could not read 'and then some' as part of `when`"
    assert results[2] == "error: give exactly one of `when` (one-time) or `every` (recurring)"
    assert results[3].startswith("error: That runs too often")
    assert results[4] == "error: kind must be 'reminder' or 'turn'"
    assert results[5] == "error: give the text (reminder) or the prompt (turn)"
    assert await berlin.schedule.jobs.list_jobs("local") == []
