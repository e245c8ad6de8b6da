"""One pass of the learner over every tenant: evaluate, decide, persist, audit.

Order per tenant: live bullets are evaluated (rollback), shadow A/Bs are
decided (promotion with the live cap, or rejection), new candidates are
proposed from the last 14 days, then pending candidates are judged. Each
state change is one transaction that commits only after its audit event was
written (audit before effect). A dry run asks no model, writes nothing and
emits nothing: it reports what a sweep would do now.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bridge.style.aggregate import GradedTurn, cohorts, graded_turns, skill_counts, turn_counts
from bridge.style.judge import Judge, judge_prompt
from bridge.style.records import read_records
from bridge.style.rules import (
    DAY_MS,
    Counts,
    Thresholds,
    ab_decision,
    bullet_text,
    is_candidate,
    score_milli,
    should_roll_back,
)
from bridge.style.store import ACTIVE, Bullet, StyleStore, SweepRow
from bridge.types.audit_sink import AuditSink, Event

NO_MODEL = "no model configured"


@dataclass
class SweepReport:
    now_ms: int
    dry_run: bool
    tenants: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    candidates: int = 0
    judged: int = 0
    pending: int = 0
    promoted: int = 0
    rejected: int = 0
    rolled_back: int = 0
    judge_status: str = "ok"

    def row(self) -> SweepRow:
        return SweepRow(
            self.now_ms,
            len(self.tenants),
            self.candidates,
            self.judged,
            self.pending,
            self.promoted,
            self.rejected,
            self.rolled_back,
            self.judge_status,
        )


def read_window_ms(t: Thresholds) -> int:
    """How far back a sweep reads: the longest of its windows."""
    return max(t.window_days, t.shadow_max_days, t.live_days) * DAY_MS


class Sweeper:
    def __init__(
        self,
        store: StyleStore,
        judge: Judge | None,
        audit: AuditSink,
        thresholds: Thresholds | None = None,
    ) -> None:
        self._store, self._judge, self._audit = store, judge, audit
        self._t = thresholds or Thresholds()

    async def sweep_chain(self, chain: Path, now_ms: int, dry_run: bool = False) -> SweepReport:
        records = list(read_records(chain, now_ms - read_window_ms(self._t)))
        return await self.sweep(records, now_ms, dry_run)

    async def sweep(
        self, records: Sequence[Mapping[str, Any]], now_ms: int, dry_run: bool = False
    ) -> SweepReport:
        report = SweepReport(now_ms, dry_run)
        turns = graded_turns(records)
        tenants = sorted({t.tenant for t in turns} | set(self._store.tenants()))
        report.tenants = tenants
        if self._judge is None or not self._judge.available:
            report.judge_status = NO_MODEL
        elif dry_run:
            report.judge_status = "dry run: judge not asked"
        run = _Run(self._store, self._audit, self._t, report, turns, dry_run)
        with run.outer():
            for tenant in tenants:
                await run.live(tenant)
                await run.shadows(tenant)
                await run.propose(tenant)
                judge = None if dry_run or report.judge_status != "ok" else self._judge
                await run.judge_pending(tenant, judge)
            report.pending = sum(1 for _ in self._store.all(("pending",)))
            if not dry_run:
                self._store.record_sweep(report.row())
        return report


class _Run:
    """The state of one sweep; each method is one stage for one tenant."""

    def __init__(
        self,
        store: StyleStore,
        audit: AuditSink,
        t: Thresholds,
        report: SweepReport,
        turns: list[GradedTurn],
        dry_run: bool,
    ) -> None:
        self.store, self.audit, self.t, self.report = store, audit, t, report
        self.turns, self.dry = turns, dry_run
        self.now = report.now_ms

    @contextlib.contextmanager
    def outer(self) -> Iterator[None]:
        """A dry run does everything inside one transaction that is rolled back."""
        if not self.dry:
            yield
            return
        with self.store.discarded():
            yield

    @contextlib.asynccontextmanager
    async def change(self, events: list[Event]) -> Any:
        """One state change: DB writes in a transaction, committed after the events."""
        if self.dry:
            yield
            self.report.events.extend(events)
            return
        with self.store.transaction():
            yield
            await self.audit.emit_many(events)
        self.report.events.extend(events)

    def say(self, tenant: str, line: str) -> None:
        self.report.lines.append(f"{tenant}: {line}")

    @property
    def cooldown_ms(self) -> int:
        return self.now + self.t.cooldown_days * DAY_MS

    # -- stage 1: live evaluation -------------------------------------------------
    async def live(self, tenant: str) -> None:
        for b in self.store.tenant(tenant, ("live",)):
            since = max(self.now - self.t.live_days * DAY_MS, b.live_since_ms or 0)
            live = turn_counts(self.turns, tenant, b.skill, since, self.now + 1)
            score = score_milli(b.without_counts.milli, b.with_counts.milli, live, self.t)
            if not should_roll_back(live, self.t):
                self.store.update(
                    b.id, self.now, live_n=live.total, live_neg=live.negative, score=score
                )
                continue
            event = _rolled_back(tenant, b, live.pct, self.t.cooldown_days)
            async with self.change([event]):
                self.store.update(
                    b.id,
                    self.now,
                    state="rolled_back",
                    outcome="live_negative",
                    live_n=live.total,
                    live_neg=live.negative,
                    score=score,
                    cooldown_until_ms=self.cooldown_ms,
                )
            self.report.rolled_back += 1
            self.say(tenant, f"rolled back {b.bid} ({b.skill}): {live.pct}% negative live")

    # -- stage 2: shadow A/B ------------------------------------------------------
    async def shadows(self, tenant: str) -> None:
        for b in self.store.tenant(tenant, ("shadow",)):
            start = b.shadow_since_ms or b.updated_ms
            end = min(self.now + 1, start + self.t.shadow_max_days * DAY_MS)
            with_, without = cohorts(self.turns, tenant, b.skill, b.bid, start, end)
            counters = {
                "with_n": with_.total,
                "with_neg": with_.negative,
                "without_n": without.total,
                "without_neg": without.negative,
            }
            decision, why = ab_decision(with_, without, self.now - start, self.t)
            if decision == "wait":
                self.store.update(b.id, self.now, **counters)
                continue
            if decision == "promote":
                await self._promote(tenant, b, with_, without, counters)
                continue
            event = _rolled_back(tenant, b, with_.pct, self.t.cooldown_days)
            async with self.change([event]):
                outcome = "ab_inconclusive" if "inconclusive" in why else "ab_failed"
                self.store.update(
                    b.id,
                    self.now,
                    state="rejected",
                    outcome=outcome,
                    cooldown_until_ms=self.cooldown_ms,
                    **counters,
                )
            self.report.rejected += 1
            self.say(
                tenant,
                f"rejected {b.bid} ({b.skill}): {why} "
                f"(with {with_.pct}% n={with_.total}, without {without.pct}% n={without.total})",
            )

    async def _promote(
        self, tenant: str, b: Bullet, with_: Counts, without: Counts, counters: dict[str, int]
    ) -> None:
        live = self.store.tenant(tenant, ("live",))
        evict = lowest(live) if len(live) >= self.t.live_cap else None
        events: list[Event] = []
        if evict is not None:
            pct = (
                evict.live_counts.pct
                if evict.live_n >= self.t.live_min_signals
                else (evict.with_counts.pct)
            )
            events.append(_rolled_back(tenant, evict, pct, self.t.cooldown_days))
        events.append(
            (
                "style.promoted",
                tenant,
                {
                    "bullet_id": b.bid,
                    "skill": b.skill,
                    "with_negative_pct": with_.pct,
                    "without_negative_pct": without.pct,
                    "turn_count": with_.total + without.total,
                },
            )
        )
        async with self.change(events):
            if evict is not None:
                self.store.update(
                    evict.id,
                    self.now,
                    state="rolled_back",
                    outcome="cap",
                    cooldown_until_ms=self.cooldown_ms,
                )
            self.store.update(
                b.id,
                self.now,
                state="live",
                live_since_ms=self.now,
                score=score_milli(without.milli, with_.milli, Counts(), self.t),
                **counters,
            )
        self.report.promoted += 1
        self.say(
            tenant,
            f"promoted {b.bid} ({b.skill}): with {with_.pct}% vs without {without.pct}% negative",
        )
        if evict is not None:
            self.report.rolled_back += 1
            self.say(tenant, f"dropped {evict.bid} ({evict.skill}): lowest score at the live cap")

    # -- stage 3: candidates ------------------------------------------------------
    async def propose(self, tenant: str) -> None:
        since = self.now - self.t.window_days * DAY_MS
        counts = {
            skill: c
            for (tid, skill), c in skill_counts(self.turns, since, self.now).items()
            if tid == tenant
        }
        active = {b.skill: b for b in self.store.tenant(tenant, ACTIVE)}
        for b in active.values():
            if b.state != "pending":
                continue
            c = counts.get(b.skill, Counts())
            if is_candidate(c, self.t):
                self.store.update(
                    b.id,
                    self.now,
                    text=bullet_text(b.skill, c),
                    signal_count=c.total,
                    negative_count=c.negative,
                )
                continue
            self.store.update(b.id, self.now, state="rejected", outcome="withdrawn")
            self.say(tenant, f"withdrew {b.bid} ({b.skill}): no longer passes the gate")
        for skill in sorted(counts):
            c = counts[skill]
            if skill in active or not is_candidate(c, self.t):
                continue
            until = self.store.cooldown_until(tenant, skill)
            if until > self.now:
                days = -(-(until - self.now) // DAY_MS)
                self.say(tenant, f"skipped {skill}: cooling down for {days} more day(s)")
                continue
            async with self.change(events := []):
                new = self.store.add_candidate(tenant, skill, bullet_text(skill, c), c, self.now)
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
            self.report.candidates += 1
            self.say(tenant, f"candidate {new.bid} ({skill}): {c.negative}/{c.total} negative")

    # -- stage 4: the judge -------------------------------------------------------
    async def judge_pending(self, tenant: str, judge: Judge | None) -> None:
        pending = self.store.tenant(tenant, ("pending",))
        if judge is None:
            for b in pending:
                self.say(tenant, f"pending {b.bid} ({b.skill}): {self.report.judge_status}")
            return
        since = self.now - self.t.window_days * DAY_MS
        for b in pending:
            c = Counts(b.signal_count, b.negative_count)
            approvals, days = self._evidence(tenant, b.skill, since)
            prompt = judge_prompt(b.skill, b.text, c, approvals, days, self.t.window_days)
            result = await judge.judge(prompt)
            self.report.judged += 1
            event: Event = (
                "style.judged",
                tenant,
                {"bullet_id": b.bid, "verdict": result.verdict, "judge_ms": result.ms},
            )
            async with self.change([event]):
                if result.verdict == "faithful":
                    self.store.update(
                        b.id,
                        self.now,
                        state="shadow",
                        shadow_since_ms=self.now,
                        judge_attempts=b.judge_attempts + 1,
                    )
                elif result.verdict == "overfit":
                    self.store.update(
                        b.id,
                        self.now,
                        state="rejected",
                        outcome="overfit",
                        judge_attempts=b.judge_attempts + 1,
                        cooldown_until_ms=self.cooldown_ms,
                    )
                else:
                    self.store.update(b.id, self.now, judge_attempts=b.judge_attempts + 1)
            if result.verdict == "overfit":
                self.report.rejected += 1
            detail = f" ({result.error_kind}; stays pending)" if result.error_kind else ""
            self.say(tenant, f"judged {b.bid} ({b.skill}): {result.verdict}{detail}")

    def _evidence(self, tenant: str, skill: str, since: int) -> tuple[int, int]:
        approvals, days = 0, set()
        for t in self.turns:
            if t.tenant == tenant and skill in t.skills and t.graded_ms >= since:
                approvals += t.signal == "approval"
                if t.signal in ("approval", "rejection", "rephrase"):
                    days.add(t.graded_ms // DAY_MS)
        return approvals, len(days)


def lowest(live: Sequence[Bullet]) -> Bullet | None:
    """The live bullet to drop at the cap: lowest score, then the oldest, then lowest id."""
    if not live:
        return None
    return min(live, key=lambda b: (b.score, b.live_since_ms or 0, b.id))


def _rolled_back(tenant: str, b: Bullet, pct: int, days: int) -> Event:
    return (
        "style.rolled_back",
        tenant,
        {"bullet_id": b.bid, "skill": b.skill, "negative_pct": pct, "cooldown_days": days},
    )
