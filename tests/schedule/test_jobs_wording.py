"""What /jobs, /remind and /every say, read as a person reads it (s33 N7, N6).

A newcomer found `/jobs` mixing two zones on one line (a job made in UTC: its
schedule in Etc/UTC, its next run in the person's new zone, under a header
naming only the new one), `/remind in 0m x` echoing the time as "in ," and
`/every 61s hi` saying "1m1s runs every 1m1s".
"""

from __future__ import annotations

import json

from bridge.app.build import Roost
from tests.conftest import ScriptedBackend
from tests.schedule.sched_helpers import berlin, say

__all__ = ["berlin"]
# The shared clock: Fri 15 Jan 2027 08:00 UTC, 09:00 in Berlin.


async def test_a_job_made_in_another_zone_reads_in_that_zone(berlin: Roost) -> None:
    await say(berlin, "/profile set timezone Etc/UTC")
    await say(berlin, "/every 5m how are things")
    await say(berlin, "/every daily 23:30 good night")
    await say(berlin, "/profile set timezone Europe/Berlin")
    await say(berlin, "/remind tomorrow 9:00 call the dentist")
    made = {j.payload: j for j in await berlin.schedule.jobs.list_jobs("local")}
    five, night, dentist = (made[t] for t in ("how are things", "good night", "call the dentist"))
    lines = (await say(berlin, "/jobs")).splitlines()
    assert lines[0] == "Jobs in this chat (times in Europe/Berlin):"
    assert (
        f"• {five.id} · turn · every 5m (Etc/UTC) · next Fri 15 Jan 08:05 Etc/UTC "
        "(09:05 in Europe/Berlin) · active — how are things"
    ) in lines
    assert (
        f"• {night.id} · turn · cron 30 23 * * * (Etc/UTC) · next Fri 15 Jan 23:30 Etc/UTC "
        "(Sat 16 Jan 00:30 in Europe/Berlin) · active — good night"
    ) in lines
    assert (
        f"• {dentist.id} · reminder · once · next Sat 16 Jan 09:00 · active — call the dentist"
    ) in lines
    shown = await say(berlin, f"/job show {five.id}")
    assert "Next run: Fri 15 Jan 08:05 Etc/UTC (09:05 in Europe/Berlin)\n" in shown
    shown = await say(berlin, f"/job show {dentist.id}")
    assert "Next run: Sat 16 Jan 09:00 (Europe/Berlin)\n" in shown


async def test_the_models_list_reads_the_same(berlin: Roost) -> None:
    await say(berlin, "/profile set timezone Etc/UTC")
    await say(berlin, "/every 5m how are things")
    await say(berlin, "/profile set timezone Europe/Berlin")
    backend = berlin.backend
    assert isinstance(backend, ScriptedBackend)
    backend.steps = [[("schedule_list", json.dumps({}))], "ok"]
    await say(berlin, "what is scheduled?")
    (listing,) = [m.content for m in backend.requests[-1].messages if m.role == "tool"]
    assert "every 5m (Etc/UTC), next Fri 15 Jan 08:05 Etc/UTC (09:05 in Europe/Berlin)" in listing


async def test_remind_in_zero_minutes_says_the_time_it_read(berlin: Roost) -> None:
    assert await say(berlin, "/remind in 0m zero") == (
        "That time is not in the future: in 0 seconds, Fri 15 Jan 09:00. "
        "Try e.g.: tomorrow 9:00 call the dentist"
    )


async def test_an_interval_too_short_is_said_once(berlin: Roost) -> None:
    reply = await say(berlin, "/every 61s hi")
    assert reply.startswith("That runs too often: every 1m1s, the limit is once every 5m.")
    reply = await say(berlin, "/every * * * * * hi")
    assert reply.startswith("That runs too often: * * * * * runs every 1m, the limit is")
