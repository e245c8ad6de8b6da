"""One pass of the learner over every tenant: evaluate, decide, persist, audit.

Order per tenant: live bullets are evaluated (rollback), shadow A/Bs are
decided (promotion with the live cap, or rejection), new candidates are
proposed from the last 14 days, then pending candidates are judged. Each
state change is one transaction that commits only after its audit event was
written (audit before effect). A dry run asks no model, writes nothing and
emits nothing: it reports what a sweep would do now.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bridge.style.aggregate import graded_turns
from bridge.style.candidates import judge_pending, propose
from bridge.style.judge import Judge
from bridge.style.live import decide_shadows, evaluate_live
from bridge.style.records import read_records
from bridge.style.rules import DAY_MS, Thresholds
from bridge.style.run import SweepReport, SweepRun
from bridge.style.store import StyleStore
from bridge.types.audit_sink import AuditSink

__all__ = ["NO_MODEL", "SweepReport", "Sweeper", "read_window_ms"]

NO_MODEL = "no model configured"


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

    async def sweep_chain(
        self, chains: Path | Sequence[Path], now_ms: int, dry_run: bool = False
    ) -> SweepReport:
        """Sweep over the records of one chain, or of every instance's chain of a home
        (merged by time, each chain in its own order)."""
        since = now_ms - read_window_ms(self._t)
        paths = [chains] if isinstance(chains, Path) else list(chains)
        per_chain = [list(read_records(path, since)) for path in paths]
        records = list(heapq.merge(*per_chain, key=lambda rec: int(rec.get("ts") or 0)))
        return await self.sweep(records, now_ms, dry_run)

    async def sweep(
        self, records: Sequence[Mapping[str, Any]], now_ms: int, dry_run: bool = False
    ) -> SweepReport:
        report = SweepReport(now_ms, dry_run)
        turns = graded_turns(records)
        tenants = sorted({t.tenant for t in turns} | set(await self._store.tenants()))
        report.tenants = tenants
        if self._judge is None or not self._judge.available:
            report.judge_status = NO_MODEL
        elif dry_run:
            report.judge_status = "dry run: judge not asked"
        run = SweepRun(self._store, self._audit, self._t, report, turns, dry_run)
        async with run.outer():
            for tenant in tenants:
                await evaluate_live(run, tenant)
                await decide_shadows(run, tenant)
                await propose(run, tenant)
                judge = None if dry_run or report.judge_status != "ok" else self._judge
                await judge_pending(run, tenant, judge)
            report.pending = len(await self._store.all(("pending",)))
            if not dry_run:
                await self._store.record_sweep(report.row())
        return report
