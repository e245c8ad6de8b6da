"""Sweep stages 1 and 2: evaluate live bullets (rollback), decide shadow A/Bs (promote, reject)."""

from __future__ import annotations

from bridge.style.aggregate import cohorts, turn_counts
from bridge.style.rules import DAY_MS, Counts, ab_decision, score_milli, should_roll_back
from bridge.style.run import SweepRun, lowest, rolled_back
from bridge.style.store import Bullet
from bridge.types.audit_sink import Event


async def evaluate_live(run: SweepRun, tenant: str) -> None:
    for b in await run.store.tenant(tenant, ("live",)):
        since = max(run.now - run.t.live_days * DAY_MS, b.live_since_ms or 0)
        live = turn_counts(run.turns, tenant, b.skill, since, run.now + 1)
        score = score_milli(b.without_counts.milli, b.with_counts.milli, live, run.t)
        if not should_roll_back(live, run.t):
            await run.store.update(
                b.id, run.now, live_n=live.total, live_neg=live.negative, score=score
            )
            continue
        event = rolled_back(tenant, b, live.pct, run.t.cooldown_days)
        async with run.change([event]):
            await run.store.update(
                b.id,
                run.now,
                state="rolled_back",
                outcome="live_negative",
                live_n=live.total,
                live_neg=live.negative,
                score=score,
                cooldown_until_ms=run.cooldown_ms,
            )
        run.report.rolled_back += 1
        run.say(tenant, f"rolled back {b.bid} ({b.skill}): {live.pct}% negative live")


async def decide_shadows(run: SweepRun, tenant: str) -> None:
    for b in await run.store.tenant(tenant, ("shadow",)):
        start = b.shadow_since_ms or b.updated_ms
        end = min(run.now + 1, start + run.t.shadow_max_days * DAY_MS)
        with_, without = cohorts(run.turns, tenant, b.skill, b.bid, start, end)
        counters = {
            "with_n": with_.total,
            "with_neg": with_.negative,
            "without_n": without.total,
            "without_neg": without.negative,
        }
        decision, why = ab_decision(with_, without, run.now - start, run.t)
        if decision == "wait":
            await run.store.update(b.id, run.now, **counters)
            continue
        if decision == "promote":
            await promote(run, tenant, b, with_, without, counters)
            continue
        event = rolled_back(tenant, b, with_.pct, run.t.cooldown_days)
        async with run.change([event]):
            outcome = "ab_inconclusive" if "inconclusive" in why else "ab_failed"
            await run.store.update(
                b.id,
                run.now,
                state="rejected",
                outcome=outcome,
                cooldown_until_ms=run.cooldown_ms,
                **counters,
            )
        run.report.rejected += 1
        run.say(
            tenant,
            f"rejected {b.bid} ({b.skill}): {why} "
            f"(with {with_.pct}% n={with_.total}, without {without.pct}% n={without.total})",
        )


async def promote(
    run: SweepRun, tenant: str, b: Bullet, with_: Counts, without: Counts, counters: dict[str, int]
) -> None:
    live = await run.store.tenant(tenant, ("live",))
    evict = lowest(live) if len(live) >= run.t.live_cap else None
    events = _promotion_events(run, tenant, b, evict, with_, without)
    async with run.change(events):
        if evict is not None:
            await run.store.update(
                evict.id,
                run.now,
                state="rolled_back",
                outcome="cap",
                cooldown_until_ms=run.cooldown_ms,
            )
        await run.store.update(
            b.id,
            run.now,
            state="live",
            live_since_ms=run.now,
            score=score_milli(without.milli, with_.milli, Counts(), run.t),
            **counters,
        )
    run.report.promoted += 1
    run.say(
        tenant,
        f"promoted {b.bid} ({b.skill}): with {with_.pct}% vs without {without.pct}% negative",
    )
    if evict is not None:
        run.report.rolled_back += 1
        run.say(tenant, f"dropped {evict.bid} ({evict.skill}): lowest score at the live cap")


def _promotion_events(
    run: SweepRun, tenant: str, b: Bullet, evict: Bullet | None, with_: Counts, without: Counts
) -> list[Event]:
    """`style.rolled_back` of the bullet dropped at the cap (if any), then `style.promoted`."""
    events: list[Event] = []
    if evict is not None:
        pct = (
            evict.live_counts.pct
            if evict.live_n >= run.t.live_min_signals
            else (evict.with_counts.pct)
        )
        events.append(rolled_back(tenant, evict, pct, run.t.cooldown_days))
    details = {
        "bullet_id": b.bid,
        "skill": b.skill,
        "with_negative_pct": with_.pct,
        "without_negative_pct": without.pct,
        "turn_count": with_.total + without.total,
    }
    events.append(("style.promoted", tenant, details))
    return events
