"""A scheduled command a job's run would refuse every time is refused when it is scheduled.

`/every 1h /tool save x` was accepted ("🔁 every hour: I'll answer …"), then
each run answered that /tool runs only when the person sends it. Now the
scheduling itself is refused, saying why and which commands a job can run,
and nothing is stored; the model's `schedule_create` gets the same answer.
Through the real core.
"""

from __future__ import annotations

import json

from bridge.app.build import Roost
from tests.schedule.sched_helpers import berlin, say
from tests.schedule.test_tool import script, tool_results

__all__ = ["berlin"]

ALLOWED = "/help, /jobs, /recall, /skills, /start, /status, /tools, /usage, /whoami"


def refusal(name: str) -> str:
    return (
        f"Not scheduled: /{name} runs only when you send it yourself, never from a scheduled "
        f"job. A job can run these commands: {ALLOWED}; or give it a prompt to answer."
    )


async def test_every_with_a_command_a_job_cannot_run_is_refused(berlin: Roost) -> None:
    assert await say(berlin, "/every 1h /tool save x") == refusal("tool")
    assert await say(berlin, "/every weekdays 8:00 /Memory@roost_bot rm all") == refusal("memory")
    assert await berlin.schedule.jobs.list_jobs("local") == []
    created = [e for e, _, _ in berlin.audit.events if e == "job.created"]  # type: ignore[attr-defined]
    assert created == []


async def test_commands_that_only_read_and_prompts_are_still_scheduled(berlin: Roost) -> None:
    assert (await say(berlin, "/every weekdays 8:00 /jobs")).startswith("🔁 ")
    assert (await say(berlin, "/every 2h summarise /r/python for me")).startswith("🔁 ")
    jobs = await berlin.schedule.jobs.list_jobs("local")
    assert sorted(j.payload for j in jobs) == ["/jobs", "summarise /r/python for me"]


async def test_the_models_schedule_create_is_told_the_same(berlin: Roost) -> None:
    jobs = [
        {"every": "1h", "kind": "turn", "text": "/tool save wc"},
        {"when": "in 2 minutes", "kind": "turn", "text": "/yes 1 steering"},
        {"when": "in 3 minutes", "text": "/tool save wc"},  # a reminder: its text is only shown
    ]
    backend = script(berlin, [("schedule_create", json.dumps(a)) for a in jobs], "done")
    await say(berlin, "set these up")
    refused, scheduled = tool_results(backend)[:2], tool_results(backend)[2]
    assert refused == [f"error: {refusal('tool')}", f"error: {refusal('yes')}"]
    assert scheduled.startswith("Scheduled. Tell the person: ⏰ I'll remind you in 3 minutes")
    (kept,) = await berlin.schedule.jobs.list_jobs("local")
    assert (kept.kind, kept.payload) == ("reminder", "/tool save wc")
