"""A scheduled job's post says which job made it (newcomer s33 N10).

A person with several jobs got "1. 2026-12-06 09:28 UTC · web:r1 · id ec4c…" from an
`/every 5m /recall dentist`, or a bare answer from `/every 1h <prompt>`: nothing said
which job posted, nor the id `/job rm` takes. Every turn or tool job's post now opens
with "🔁 <what it runs> (job <id>)", whatever the channel (the runner makes the post).
"""

from __future__ import annotations

from bridge.app.build import Roost
from bridge.app.schedule_loop import ScheduleLoop
from bridge.schedule.runtime import digest
from bridge.schedule.scheduler import Post
from forge.library import ToolLibrary, build_spec
from tests.schedule.sched_helpers import berlin, say

__all__ = ["berlin"]


def save_tool(roost: Roost, name: str, body: str, replace: bool = False) -> None:
    """A saved tool, as `/tool save` leaves it (`replace`: saved again, a new version)."""
    made = build_spec(name, "a test tool", f'def run() -> str:\n    """T."""\n    {body}\n')
    assert made.tool is not None, made
    ToolLibrary(roost.tenant_dirs("local").tools, lambda: 0).save(made.tool, replace=replace)


async def test_a_recall_jobs_post_names_the_job_and_its_id(berlin: Roost) -> None:
    await say(berlin, "/remember the dentist is Dr. Weiss on Main Street")
    made = await say(berlin, "/every 5m /recall dentist")
    (job,) = await berlin.schedule.jobs.list_jobs("local", "web", "c1")
    assert job.id in made
    assert job.next_run_ms is not None
    post = str(await ScheduleLoop(berlin).runner(job, job.next_run_ms))
    head, _, body = post.partition("\n")
    assert head == f"🔁 /recall dentist (job {job.id})"
    assert body.strip()  # the recall's output follows


async def test_two_jobs_posts_tell_which_is_which(berlin: Roost) -> None:
    await say(berlin, "/every 5m /jobs")
    await say(berlin, "/every 1h /recall dentist")
    jobs = sorted(await berlin.schedule.jobs.list_jobs("local"), key=lambda j: j.payload)
    runner = ScheduleLoop(berlin).runner
    heads = [str(await runner(j, j.next_run_ms or 0)).partition("\n")[0] for j in jobs]
    assert heads == [f"🔁 {j.payload} (job {j.id})" for j in jobs]
    assert len({j.id for j in jobs}) == 2


async def test_a_digest_an_older_roost_stored_still_tells_no_change(berlin: Roost) -> None:
    """`on change` compares the tool's output as it was always hashed (without the job's
    line): a job whose last result an older roost recorded does not post it again."""
    save_tool(berlin, "wc", 'return "3"')
    await say(berlin, "/every 5m me.wc")
    (job,) = await berlin.schedule.jobs.list_jobs("local")
    older = digest('me.wc: "3"')  # what an older roost stored after posting 'me.wc: "3"'
    assert await berlin.schedule.jobs.set_digest("local", job.id, older)
    (job,) = await berlin.schedule.jobs.list_jobs("local")
    runner = ScheduleLoop(berlin).runner
    assert await runner(job, job.next_run_ms or 0) is None
    save_tool(berlin, "wc", 'return "4"', replace=True)
    post = await runner(job, job.next_run_ms or 0)
    assert isinstance(post, Post)
    assert str(post.text) == f'🔁 me.wc (on change) (job {job.id})\nme.wc: "4"'
