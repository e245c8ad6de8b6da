"""Sweep stages 3 and 4: propose candidate bullets from the window, then ask the judge."""

from __future__ import annotations

from bridge.core.words import count
from bridge.style.aggregate import skill_counts
from bridge.style.judge import Judge, judge_prompt
from bridge.style.rules import DAY_MS, Counts, bullet_text, is_candidate
from bridge.style.run import SweepRun
from bridge.style.store import ACTIVE, Bullet
from bridge.types.audit_sink import Event


async def propose(run: SweepRun, tenant: str) -> None:
    since = run.now - run.t.window_days * DAY_MS
    counts = {
        skill: c
        for (tid, skill), c in skill_counts(run.turns, since, run.now).items()
        if tid == tenant
    }
    active = {b.skill: b for b in await run.store.tenant(tenant, ACTIVE)}
    await _refresh_pending(
        run, tenant, [b for b in active.values() if b.state == "pending"], counts
    )
    for skill in sorted(counts):
        c = counts[skill]
        if skill in active or not is_candidate(c, run.t):
            continue
        until = await run.store.cooldown_until(tenant, skill)
        if until > run.now:
            days = -(-(until - run.now) // DAY_MS)
            run.say(tenant, f"skipped {skill}: cooling down for {count(days, 'more day')}")
            continue
        await _add_candidate(run, tenant, skill, c)


async def _refresh_pending(
    run: SweepRun, tenant: str, pending: list[Bullet], counts: dict[str, Counts]
) -> None:
    """Pending bullets take the window's counts, or are withdrawn when they fail the gate."""
    for b in pending:
        c = counts.get(b.skill, Counts())
        if is_candidate(c, run.t):
            await run.store.update(
                b.id,
                run.now,
                text=bullet_text(b.skill, c),
                signal_count=c.total,
                negative_count=c.negative,
            )
            continue
        await run.store.update(b.id, run.now, state="rejected", outcome="withdrawn")
        run.say(tenant, f"withdrew {b.bid} ({b.skill}): no longer passes the gate")


async def _add_candidate(run: SweepRun, tenant: str, skill: str, c: Counts) -> None:
    async with run.change(events := []):
        new = await run.store.add_candidate(tenant, skill, bullet_text(skill, c), c, run.now)
        events.append(
            (
                "style.candidate",
                tenant,
                {
                    "bullet_id": new.bid,
                    "skill": skill,
                    "signal_count": c.total,
                    "negative_pct": c.pct,
                },
            )
        )
    run.report.candidates += 1
    run.say(tenant, f"candidate {new.bid} ({skill}): {c.negative}/{c.total} negative")


async def judge_pending(run: SweepRun, tenant: str, judge: Judge | None) -> None:
    pending = await run.store.tenant(tenant, ("pending",))
    if judge is None:
        for b in pending:
            run.say(tenant, f"pending {b.bid} ({b.skill}): {run.report.judge_status}")
        return
    since = run.now - run.t.window_days * DAY_MS
    for b in pending:
        c = Counts(b.signal_count, b.negative_count)
        approvals, days = _evidence(run, tenant, b.skill, since)
        prompt = judge_prompt(b.skill, b.text, c, approvals, days, run.t.window_days)
        result = await judge.judge(prompt, tenant)
        run.report.judged += 1
        event: Event = (
            "style.judged",
            tenant,
            {"bullet_id": b.bid, "verdict": result.verdict, "judge_ms": result.ms},
        )
        async with run.change([event]):
            await _apply_verdict(run, b, result.verdict)
        if result.verdict == "overfit":
            run.report.rejected += 1
        detail = f" ({result.error_kind}; stays pending)" if result.error_kind else ""
        run.say(tenant, f"judged {b.bid} ({b.skill}): {result.verdict}{detail}")


async def _apply_verdict(run: SweepRun, b: Bullet, verdict: str) -> None:
    """faithful: into shadow; overfit: rejected and cooled down; else stays pending."""
    attempts = b.judge_attempts + 1
    if verdict == "faithful":
        await run.store.update(
            b.id, run.now, state="shadow", shadow_since_ms=run.now, judge_attempts=attempts
        )
    elif verdict == "overfit":
        await run.store.update(
            b.id,
            run.now,
            state="rejected",
            outcome="overfit",
            judge_attempts=attempts,
            cooldown_until_ms=run.cooldown_ms,
        )
    else:
        await run.store.update(b.id, run.now, judge_attempts=attempts)


def _evidence(run: SweepRun, tenant: str, skill: str, since: int) -> tuple[int, int]:
    approvals, days = 0, set()
    for t in run.turns:
        if t.tenant == tenant and skill in t.skills and t.graded_ms >= since:
            approvals += t.signal == "approval"
            if t.signal in ("approval", "rejection", "rephrase"):
                days.add(t.graded_ms // DAY_MS)
    return approvals, len(days)
