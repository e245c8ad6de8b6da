"""What a scheduled turn job's chat hears when its turn fails: once, in plain words.

Found by a newcomer (s34): a `/every` turn job whose model backend was down, timed
out, was refused by the token budget or failed inside the turn posted nothing;
every run failed silently, only the log knew. Now the first failure is told (what
failed, that it tries again at the next run, `/job rm <id>` to stop it), masked
like any post and without a trace, and again only after a run that worked; the job
stays on its schedule. The real core, the daemon's `ScheduleLoop` (its runner and
scheduler), the real job store and outbox; the clock is the test's.
"""

from __future__ import annotations

import json

from bridge.app.build import Roost
from bridge.app.schedule_loop import ScheduleLoop
from bridge.core.budgets import Budget
from bridge.core.usage import Tokens
from bridge.loadout import vault
from bridge.schedule.jobs import Job
from bridge.schedule.outbox import OutboxEntry
from bridge.schedule.scheduler import SchedulerConfig
from bridge.types.backend import BackendError
from tests.conftest import Clock, ScriptedBackend
from tests.schedule.sched_helpers import berlin, say
from tests.waits import until

__all__ = ["berlin"]

SECRET = "Q7x9-Lmn2-Door"


def daemon(roost: Roost, clock: Clock, sent: list[str], **config: int) -> ScheduleLoop:
    """The scheduler as the daemon wires it, its web posts collected in `sent`."""
    loop = ScheduleLoop(roost, clock=lambda: int(clock() * 1000), config=SchedulerConfig(**config))

    async def deliver(entry: OutboxEntry) -> None:
        sent.append(entry.text)

    loop.deliveries.add("web", deliver)
    return loop


def script(roost: Roost, *steps: object) -> ScriptedBackend:
    backend = roost.backend
    assert isinstance(backend, ScriptedBackend)
    backend.steps = list(steps)
    return backend


async def run_once(loop: ScheduleLoop, clock: Clock) -> None:
    clock.advance(301)  # past the next 5-minute slot
    await loop.scheduler.tick()


async def the_job(roost: Roost) -> Job:
    (job,) = await roost.schedule.jobs.list_jobs("local")
    return job


def told(job: Job, reason: str) -> str:
    return (
        f"⚠️ job {job.id} (summarize my inbox, every 5m (Europe/Berlin)) failed: {reason}\n"
        "It tries again at its next run; after 5 failures in a row it is paused "
        f"(/job resume {job.id} starts it again). This chat hears of it again only if it works "
        f"and then fails again. /jobs shows its state, /job rm {job.id} removes it."
    )


async def test_a_turn_job_whose_backend_is_down_is_told_once_until_it_works_again(
    berlin: Roost, clock: Clock
) -> None:
    vault.set_value(berlin.tenant_dirs("local"), "door", SECRET)
    await say(berlin, "/every 5m summarize my inbox")
    job = await the_job(berlin)
    down = BackendError("unavailable", f"The model server is not reachable (token {SECRET}).")
    script(berlin, down, down, down, "3 new mails.", down, down)
    sent: list[str] = []
    loop = daemon(berlin, clock, sent)
    for _ in range(3):
        await run_once(loop, clock)
    reason = "The model server is not reachable (token [vault:door])."
    assert sent == [told(job, reason)]  # once, masked, with what to do
    failing = await berlin.schedule.jobs.get("local", job.id)
    assert failing is not None and (failing.state, failing.fail_count) == ("active", 3)
    assert failing.last_error == f"TurnFailed: {reason}"
    assert failing.next_run_ms is not None and failing.next_run_ms > clock() * 1000  # on time
    await run_once(loop, clock)  # the backend is back
    assert sent[1] == f"🔁 summarize my inbox (job {job.id})\n3 new mails."
    await run_once(loop, clock)
    await run_once(loop, clock)
    assert sent[2:] == [told(job, reason)]  # failing again after it worked: told again
    assert SECRET not in json.dumps(sent)
    ran = [d for e, _, d in berlin.audit.events if e == "job.ran"]  # type: ignore[attr-defined]
    assert [d["outcome"] for d in ran] == ["failed"] * 3 + ["ok"] + ["failed"] * 2


async def test_an_error_inside_the_turn_is_told_without_its_trace(
    berlin: Roost, clock: Clock
) -> None:
    await say(berlin, "/every 5m summarize my inbox")
    job = await the_job(berlin)

    def broken(request: object) -> str:
        raise RuntimeError(f"connection string postgres://roost:{SECRET}@db/roost")

    script(berlin, broken)
    sent: list[str] = []
    await run_once(daemon(berlin, clock, sent), clock)
    (post,) = sent
    assert post.startswith(
        f"⚠️ job {job.id} (summarize my inbox, every 5m (Europe/Berlin)) failed: "
        "Something went wrong on my side (ref "
    )
    assert post.endswith(f"/jobs shows its state, /job rm {job.id} removes it.")
    assert SECRET not in post and "Traceback" not in post and "RuntimeError" not in post
    after = await berlin.schedule.jobs.get("local", job.id)
    assert after is not None and (after.state, after.fail_count) == ("active", 1)


async def test_a_turn_job_refused_by_the_budget_is_told(berlin: Roost, clock: Clock) -> None:
    await say(berlin, "/every 5m summarize my inbox")
    job = await the_job(berlin)
    berlin.meter.set_budgets(lambda tenant: Budget(daily=1_000))
    await berlin.meter.record("local", "scripted", Tokens(prompt=900, completion=150))
    backend = script(berlin)
    sent: list[str] = []
    loop = daemon(berlin, clock, sent)
    await run_once(loop, clock)
    await run_once(loop, clock)
    (post,) = sent
    assert post.startswith(
        f"⚠️ job {job.id} (summarize my inbox, every 5m (Europe/Berlin)) failed: "
        "Your daily token budget is used up: 1,050 of 1,000 tokens today (UTC)."
    )
    assert "It tries again at its next run;" in post and f"/job rm {job.id}" in post
    assert backend.requests == []  # no model was asked
    after = await berlin.schedule.jobs.get("local", job.id)
    assert after is not None and (after.state, after.fail_count) == ("active", 2)
    assert after.last_error.startswith("TurnRefused: Your daily token budget is used up")


async def test_a_turn_job_past_its_deadline_is_told_and_keeps_its_schedule(
    berlin: Roost, clock: Clock
) -> None:
    await say(berlin, "/every 5m summarize my inbox")
    job = await the_job(berlin)
    backend = script(berlin)
    backend.delay = 3600.0  # the model never answers
    sent: list[str] = []
    loop = daemon(berlin, clock, sent, run_deadline_ms=120_000, run_grace_ms=0)
    clock.advance(301)
    await loop.scheduler.tick(wait=False)  # the run starts ...
    await until(lambda: backend.requests, "the model asked")  # ... and hangs there
    clock.advance(121)
    await loop.scheduler.tick(wait=False)  # past its deadline: cancelled

    async def recorded() -> bool:
        now = await berlin.schedule.jobs.get("local", job.id)
        return now is not None and now.fail_count == 1

    await until(recorded, "the cancelled run recorded")
    await loop.scheduler.tick(wait=False)
    assert sent == [told(job, "it had no result after 2 minutes, so it was stopped")]
    after = await berlin.schedule.jobs.get("local", job.id)
    assert after is not None and after.state == "active"
    assert after.last_error == "RunTimeout: no result within 120 s"


async def test_a_one_shot_turn_job_says_it_is_tried_again(berlin: Roost, clock: Clock) -> None:
    create = json.dumps({"kind": "turn", "when": "in 10 minutes", "text": "summarize my inbox"})
    script(berlin, [("schedule_create", create)], "Done.")
    await say(berlin, "summarize my inbox in 10 minutes")
    job = await the_job(berlin)
    assert (job.kind, job.recurring) == ("turn", False)
    script(berlin, BackendError("timeout", "The model server did not answer in time."))
    sent: list[str] = []
    clock.advance(601)
    await daemon(berlin, clock, sent).scheduler.tick()
    assert sent == [
        f"⚠️ job {job.id} (summarize my inbox, once) failed: "
        "The model server did not answer in time.\n"
        "It is tried again in a few minutes, 3 tries in all. "
        f"/jobs shows its state, /job rm {job.id} removes it."
    ]


async def test_a_reminder_still_posts_only_its_text(berlin: Roost, clock: Clock) -> None:
    await say(berlin, "/remind in 5 minutes stretch")
    script(berlin, BackendError("unavailable", "The model server is not reachable."))
    sent: list[str] = []
    clock.advance(301)
    await daemon(berlin, clock, sent).scheduler.tick()
    assert sent == ["⏰ stretch"]
