"""What a scheduled `me.*` tool posts in its chat: bounded, and its failures told.

Found by a newcomer (s33 N17, N11, N11b): a tool returning 200,000 characters was
posted whole at every run; a job whose tool was removed, or whose tool fails,
posted nothing, stayed active and failed at every run (only the log and `/jobs`
knew). The real core, tools and sandbox, the real job store and outbox; the
scheduler is driven by the shared clock.
"""

from __future__ import annotations

from bridge.app.build import Roost
from bridge.loadout import vault
from bridge.schedule.outbox import OutboxEntry
from bridge.schedule.runtime import JobRunner, audit_observer
from bridge.schedule.scheduler import Scheduler
from bridge.schedule.service import next_run_ms
from forge.library import ToolLibrary, build_spec
from tests.conftest import Clock
from tests.schedule.sched_helpers import berlin, say
from tests.schedule.test_commands import NOW_MS, save_tool

__all__ = ["berlin"]

LIMIT = 1_000


def scheduler(roost: Roost, clock: Clock, sent: list[str]) -> Scheduler:
    runner = JobRunner(
        handle=roost.core.handle, resolve=roost.resolver.resolve,
        tool_sources=roost.tool_sources, tenant_dirs=roost.tenant_dirs,
        now=clock, masks=roost.loadout.vault.masker, max_post_chars=lambda: LIMIT,
    )  # fmt: skip

    async def deliver(entry: OutboxEntry) -> None:
        sent.append(entry.text)

    return Scheduler(
        roost.schedule.jobs, roost.schedule.outbox, run_job=runner, deliver=deliver,
        next_run=next_run_ms, clock=lambda: int(clock() * 1000),
        observe=audit_observer(roost.audit),
    )  # fmt: skip


def replace_tool(roost: Roost, name: str, body: str) -> None:
    """The tool saved again with a new body (`/tool save` of a new draft)."""
    made = build_spec(name, "a test tool", f'def run() -> str:\n    """T."""\n    {body}\n')
    assert made.tool is not None, made
    ToolLibrary(roost.tenant_dirs("local").tools, lambda: NOW_MS).save(made.tool, replace=True)


CUT = "\n… [reply cut at 1,000 characters]"


async def run_once(sched: Scheduler, clock: Clock) -> None:
    clock.advance(301)  # past the next 5-minute slot
    await sched.tick()


async def test_a_tool_jobs_long_output_is_cut_visibly(berlin: Roost, clock: Clock) -> None:
    save_tool(berlin, "big", '"""T."""\n    ' + 'return "z" * 200000')
    await say(berlin, "/every 5m me.big always")
    sent: list[str] = []
    await run_once(scheduler(berlin, clock, sent), clock)
    (post,) = sent
    (job,) = await berlin.schedule.jobs.list_jobs("local")
    head = f"🔁 me.big (always) (job {job.id})\n"  # the post names its job, then the output
    assert post == head + 'me.big: "' + "z" * (LIMIT - len(head) - 9) + CUT


async def test_a_vaulted_value_at_the_cut_is_not_half_posted(berlin: Roost, clock: Clock) -> None:
    value = "Q7x9-Lmn2-Door"
    vault.set_value(berlin.tenant_dirs("local"), "door", value)
    # the value starts 5 characters before the limit of what is posted (the job's line,
    # 'me.big: "' + ...)
    head = len("🔁 me.big (always) (job abcdef)\n")
    zs = LIMIT - head - 14
    save_tool(berlin, "big", '"""T."""\n    ' + f'return "z" * {zs} + "{value}" + "z" * 50')
    await say(berlin, "/every 5m me.big always")
    sent: list[str] = []
    await run_once(scheduler(berlin, clock, sent), clock)
    (post,) = sent
    assert value[:4] not in post and post.endswith("\n… [reply cut at 1,000 characters]")
    (job,) = await berlin.schedule.jobs.list_jobs("local")
    start = f"🔁 me.big (always) (job {job.id})\n" + 'me.big: "' + "z" * zs
    assert post.startswith(start + "[vault:door]"[:5])


async def test_a_job_whose_tool_is_gone_is_paused_and_says_so_once(
    berlin: Roost, clock: Clock
) -> None:
    save_tool(berlin, "wc", '"""T."""\n    ' + 'return "3"')
    await say(berlin, "/every 5m me.wc always")
    (job,) = await berlin.schedule.jobs.list_jobs("local")
    assert (await say(berlin, "/tool rm me.wc")).startswith("Removed me.wc")
    sent: list[str] = []
    sched = scheduler(berlin, clock, sent)
    await run_once(sched, clock)
    await run_once(sched, clock)  # paused: it does not run (nor speak) again
    assert sent == [
        f"⚠️ job {job.id} (me.wc (always), every 5m (Europe/Berlin)) is paused: "
        "me.wc is no longer one of your saved tools, so it cannot run. "
        f"Save me.wc again and send /job resume {job.id}, "
        f"or remove the job: /job rm {job.id}"
    ]
    after = await berlin.schedule.jobs.get("local", job.id)
    assert after is not None and (after.state, after.runs, after.fail_count) == ("paused", 1, 1)
    assert after.last_error == "JobSkipped: me.wc is not a saved tool"
    ran = [d for e, _, d in berlin.audit.events if e == "job.ran"]  # type: ignore[attr-defined]
    assert [d["outcome"] for d in ran] == ["skipped"]


async def test_a_failing_tool_is_told_once_until_it_works_again(
    berlin: Roost, clock: Clock
) -> None:
    save_tool(berlin, "boom", '"""T."""\n    ' + "return str(1 // 0)")
    await say(berlin, "/every 5m me.boom always")
    (job,) = await berlin.schedule.jobs.list_jobs("local")
    sent: list[str] = []
    sched = scheduler(berlin, clock, sent)
    for _ in range(3):
        await run_once(sched, clock)
    (told,) = sent
    assert told.startswith(
        f"⚠️ job {job.id} (me.boom (always), every 5m (Europe/Berlin)) failed: "
        "me.boom failed (runtime): ZeroDivisionError"
    )
    assert told.endswith(
        "It tries again at its next run; after 5 failures in a row it is paused "
        f"(/job resume {job.id} starts it again). This chat hears of it again only if it works "
        f"and then fails again. /jobs shows its state, /job rm {job.id} removes it."
    )
    failing = await berlin.schedule.jobs.get("local", job.id)
    assert failing is not None and (failing.state, failing.fail_count) == ("active", 3)
    replace_tool(berlin, "boom", 'return "fine"')
    await run_once(sched, clock)
    replace_tool(berlin, "boom", "return str(1 // 0)")
    await run_once(sched, clock)
    await run_once(sched, clock)
    assert (
        sent[1] == f'🔁 me.boom (always) (job {job.id})\nme.boom: "fine"'
        and len(sent) == 3
        and sent[2].startswith(told[:40])
    )
