"""A paused job shows no next run, and `/job show` counts the text it shows (s35 N21).

A newcomer paused a job: `/job show` still said "Next run: Sun 6 Dec 14:20:34" (the
time it kept, not when it runs: `/job resume` sets a new one), and so did `/jobs`, the
model's `schedule_list` and `roost jobs`. For a tool job it said "Text (37
characters):" above the 16 characters it showed (37 counted its stored JSON). The real
core, commands and job store; `roost jobs` through its entry point.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from bridge.app.build import Roost
from bridge.cli.main import main
from tests.conftest import ScriptedBackend
from tests.schedule.sched_helpers import berlin, say
from tests.schedule.test_commands import save_tool

__all__ = ["berlin"]
# The shared clock: Fri 15 Jan 2027 08:00 UTC, 09:00 in Berlin.


async def paused_job(roost: Roost) -> str:
    await say(roost, "/every 5m how are things")
    (job,) = await roost.schedule.jobs.list_jobs("local")
    assert await say(roost, f"/job pause {job.id}") == f"Job {job.id} paused: how are things"
    return job.id


async def test_a_paused_job_shows_no_next_run_in_the_chat(berlin: Roost) -> None:
    job_id = await paused_job(berlin)
    shown = await say(berlin, f"/job show {job_id}")
    assert shown.splitlines()[1] == (
        f"Next run: none while it is paused (/job resume {job_id} restarts it)"
    )
    listing = await say(berlin, "/jobs")
    line = f"• {job_id} · turn · every 5m (Europe/Berlin) · no next run · paused — how are things"
    assert line in listing.splitlines()
    assert "next Fri" not in listing

    backend = berlin.backend
    assert isinstance(backend, ScriptedBackend)
    backend.steps = [[("schedule_list", json.dumps({}))], "ok"]
    await say(berlin, "what is scheduled?")
    (told,) = [m.content for m in backend.requests[-1].messages if m.role == "tool"]
    assert (
        f"- {job_id}: turn, every 5m (Europe/Berlin), no next run, paused: how are things" in told
    )

    await say(berlin, f"/job resume {job_id}")
    shown = await say(berlin, f"/job show {job_id}")
    assert shown.splitlines()[1] == "Next run: Fri 15 Jan 09:05 (Europe/Berlin)"
    assert " · next Fri 15 Jan 09:05 · active — how are things" in await say(berlin, "/jobs")


async def test_roost_jobs_shows_no_next_run_for_a_paused_job(
    berlin: Roost, capsys: pytest.CaptureFixture[str]
) -> None:
    job_id = await paused_job(berlin)
    await say(berlin, "/every 10m and another")
    capsys.readouterr()
    assert await asyncio.to_thread(main, ["jobs"]) == 0
    lines = {line.split("\t")[1]: line.split("\t") for line in capsys.readouterr().out.split("\n")
             if line}  # fmt: skip
    paused = lines.pop(job_id)
    assert paused[4:7] == ["paused", "every 5m", "next none (paused)"]
    ((_, active),) = lines.items()
    assert active[4] == "active" and active[6].startswith("next 2027-01-15 ")


async def test_a_tool_jobs_text_is_counted_as_shown(berlin: Roost) -> None:
    save_tool(berlin, "boom", '"""T."""\n    return "x"')
    await say(berlin, "/every 5m me.boom always")
    (job,) = await berlin.schedule.jobs.list_jobs("local")
    shown = await say(berlin, f"/job show {job.id}")
    assert shown.endswith("\nText (16 characters):\nme.boom (always)"), shown
    assert len("me.boom (always)") == 16
