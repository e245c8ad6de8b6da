"""The sweep end to end over records: judge, cooldowns, A/B, rollback, cap, isolation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.audit.catalogue import EVENTS
from bridge.audit.redact import redact
from bridge.llm.offline import OfflineBackend
from bridge.style.judge import Judge
from bridge.style.rules import Counts, bullet_text
from bridge.style.store import StyleStore
from bridge.style.sweep import NO_MODEL, Sweeper
from bridge.style.view import LearnedStyle
from bridge.types.audit_sink import MemoryAudit
from bridge.types.backend import BackendError, ModelEvent, ModelRequest
from bridge.types.tenant_dirs import TenantDirs
from tests.style.helpers import DAY, T0, FakeJudge, cohort_records, open_store, outage, signals


def sweeper(store: StyleStore, *answers: object) -> tuple[Sweeper, MemoryAudit, FakeJudge]:
    audit, backend = MemoryAudit(), FakeJudge(*answers)
    return Sweeper(store, Judge(backend), audit), audit, backend


def names(audit: MemoryAudit) -> list[str]:
    return [e[0] for e in audit.events]


async def test_candidate_judged_faithful_goes_to_shadow(tmp_path: Path) -> None:
    _, store = await open_store(tmp_path)
    sw, audit, backend = sweeper(store, "FAITHFUL")
    report = await sw.sweep(signals("alice", "deploy", 7, 1, T0 - DAY), T0)
    [b] = await store.tenant("alice")
    assert (b.state, b.shadow_since_ms, b.signal_count, b.negative_count) == ("shadow", T0, 8, 7)
    assert b.text == bullet_text("deploy", Counts(8, 7))
    assert names(audit) == ["style.candidate", "style.judged"]
    assert audit.events[0][2] == {
        "bullet_id": b.bid,
        "skill": "deploy",
        "signal_count": 8,
        "negative_pct": 87,
    }
    assert report.candidates == 1 and report.judged == 1
    [request] = backend.requests
    assert len(request.messages) == 1 and "deploy" in request.messages[0].content
    assert "FAITHFUL or OVERFIT" in request.messages[0].content


@pytest.mark.parametrize("answer", [outage(), "I am not sure", BackendError("timeout", "slow")])
async def test_judge_failure_keeps_candidate_pending(tmp_path: Path, answer: object) -> None:
    _, store = await open_store(tmp_path)
    sw, audit, _ = sweeper(store, answer, "FAITHFUL")
    recs = signals("alice", "deploy", 6, 0, T0 - DAY)
    await sw.sweep(recs, T0)
    [b] = await store.tenant("alice")
    assert (b.state, b.cooldown_until_ms, b.judge_attempts) == ("pending", 0, 1)
    assert audit.events[-1][2]["verdict"] == "error"
    await sw.sweep(recs, T0 + DAY)  # retried next sweep, not re-proposed
    [b] = await store.tenant("alice")
    assert b.state == "shadow"
    assert names(audit).count("style.candidate") == 1


async def test_judge_timeout_is_not_overfit(tmp_path: Path) -> None:
    class Slow(FakeJudge):
        async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
            await asyncio.sleep(5)
            async for event in super().stream(request):
                yield event

    _, store = await open_store(tmp_path)
    sw = Sweeper(store, Judge(Slow(), timeout_s=0.05), MemoryAudit())
    await sw.sweep(signals("alice", "deploy", 6, 0, T0 - DAY), T0)
    [b] = await store.tenant("alice")
    assert (b.state, b.cooldown_until_ms) == ("pending", 0)


async def test_offline_backend_leaves_candidates_pending(tmp_path: Path) -> None:
    _, store = await open_store(tmp_path)
    audit = MemoryAudit()
    sw = Sweeper(store, Judge(OfflineBackend()), audit)
    report = await sw.sweep(signals("alice", "deploy", 6, 0, T0 - DAY), T0)
    assert report.judge_status == NO_MODEL and report.pending == 1
    assert names(audit) == ["style.candidate"]
    assert any(NO_MODEL in line for line in report.lines)


async def test_overfit_cools_down_30_days_and_is_not_reproposed(tmp_path: Path) -> None:
    _, store = await open_store(tmp_path)
    sw, _, backend = sweeper(store, "OVERFIT", "FAITHFUL")
    await sw.sweep(signals("alice", "deploy", 6, 0, T0 - DAY), T0)
    [b] = await store.tenant("alice")
    assert (b.state, b.outcome, b.cooldown_until_ms) == ("rejected", "overfit", T0 + 30 * DAY)
    for day in (1, 10, 29):  # fresh negative data every time, still cooling down
        recs = signals("alice", "deploy", 6, 0, T0 + (day - 1) * DAY, tag=f"d{day}")
        report = await sw.sweep(recs, T0 + day * DAY)
        assert report.candidates == 0
        assert any("cooling down" in line for line in report.lines)
    assert len(await store.tenant("alice")) == 1 and len(backend.requests) == 1
    recs = signals("alice", "deploy", 6, 0, T0 + 30 * DAY, tag="late")
    report = await sw.sweep(recs, T0 + 31 * DAY)
    assert report.candidates == 1 and (await store.tenant("alice"))[-1].state == "shadow"


async def test_cooldown_is_per_tenant_and_skill(tmp_path: Path) -> None:
    _, store = await open_store(tmp_path)
    sw, _, _ = sweeper(store, "OVERFIT", "FAITHFUL", "FAITHFUL")
    await sw.sweep(signals("alice", "deploy", 6, 0, T0 - DAY), T0)
    recs = signals("alice", "deploy", 6, 0, T0, tag="x") + signals("alice", "review", 6, 0, T0)
    recs += signals("bob", "deploy", 6, 0, T0, tag="b")
    await sw.sweep(recs, T0 + DAY)
    assert [b.skill for b in await store.tenant("alice", ("shadow",))] == ["review"]
    assert [b.skill for b in await store.tenant("bob", ("shadow",))] == ["deploy"]


async def shadow_bullet(store: StyleStore, tenant: str = "alice", skill: str = "deploy") -> str:
    sw, _, _ = sweeper(store, "FAITHFUL")
    await sw.sweep(signals(tenant, skill, 6, 0, T0 - DAY, tag=f"{tenant}{skill}"), T0)
    [b] = [b for b in await store.tenant(tenant, ("shadow",)) if b.skill == skill]
    return b.bid


async def test_ab_promotes_at_exactly_five_points(tmp_path: Path) -> None:
    _, store = await open_store(tmp_path)
    bid = await shadow_bullet(store)
    recs = cohort_records("alice", "deploy", bid, T0, with_=(11, 20), without=(12, 20))
    sw, audit, _ = sweeper(store)
    report = await sw.sweep(recs, T0 + 2 * DAY)
    assert report.promoted == 0 and (await store.tenant("alice"))[0].with_n == 20
    report = await sw.sweep(recs, T0 + 3 * DAY)
    [b] = await store.tenant("alice")
    assert (b.state, b.live_since_ms, report.promoted) == ("live", T0 + 3 * DAY, 1)
    assert audit.events[-1] == (
        "style.promoted",
        "alice",
        {
            "bullet_id": bid,
            "skill": "deploy",
            "with_negative_pct": 55,
            "without_negative_pct": 60,
            "turn_count": 40,
        },
    )
    assert b.score == 50  # 600 - 550 per mille


async def test_ab_without_improvement_is_rejected_with_cooldown(tmp_path: Path) -> None:
    _, store = await open_store(tmp_path)
    bid = await shadow_bullet(store)
    recs = cohort_records("alice", "deploy", bid, T0, with_=(56, 100), without=(60, 100))
    sw, audit, _ = sweeper(store)
    await sw.sweep(recs, T0 + 3 * DAY)
    [b] = await store.tenant("alice")
    assert (b.state, b.outcome, b.cooldown_until_ms) == ("rejected", "ab_failed", T0 + 33 * DAY)
    assert audit.events[-1] == (
        "style.rolled_back",
        "alice",
        {"bullet_id": bid, "skill": "deploy", "negative_pct": 56, "cooldown_days": 30},
    )


async def test_thin_ab_is_extended_then_inconclusive(tmp_path: Path) -> None:
    _, store = await open_store(tmp_path)
    bid = await shadow_bullet(store)
    recs = cohort_records("alice", "deploy", bid, T0, with_=(0, 4), without=(4, 4))
    sw, _, _ = sweeper(store)
    await sw.sweep(recs, T0 + 5 * DAY)
    assert (await store.tenant("alice"))[0].state == "shadow"
    await sw.sweep(recs, T0 + 14 * DAY)
    assert (await store.tenant("alice"))[0].outcome == "ab_inconclusive"


async def promote(store: StyleStore, tenant: str, skill: str, with_: tuple[int, int]) -> str:
    bid = await shadow_bullet(store, tenant, skill)
    recs = cohort_records(tenant, skill, bid, T0, with_=with_, without=(9, 10), tag=skill)
    sw, _, _ = sweeper(store)
    await sw.sweep(recs, T0 + 3 * DAY)
    assert (await store.tenant(tenant, ("live",)))[-1].bid == bid
    return bid


async def test_live_rollback_after_55_percent(tmp_path: Path) -> None:
    _, store = await open_store(tmp_path)
    bid = await promote(store, "alice", "deploy", (1, 10))
    live_start = T0 + 3 * DAY
    sw, audit, _ = sweeper(store)
    # 11/20 = 55 %: stays; pre-promotion turns do not count against it
    recs = signals("alice", "deploy", 11, 9, live_start + 1000, tag="L")
    recs += signals("alice", "deploy", 30, 0, T0 - 2 * DAY, tag="before")
    await sw.sweep(recs, live_start + 2 * DAY)
    [b] = await store.tenant("alice")
    assert (b.state, b.live_n, b.live_neg) == ("live", 20, 11)
    recs += signals("alice", "deploy", 1, 0, live_start + 2 * DAY, tag="M")
    await sw.sweep(recs, live_start + 3 * DAY)
    [b] = await store.tenant("alice")
    assert (b.state, b.outcome) == ("rolled_back", "live_negative")
    assert b.cooldown_until_ms == live_start + 33 * DAY
    assert audit.events[-1] == (
        "style.rolled_back",
        "alice",
        {"bullet_id": bid, "skill": "deploy", "negative_pct": 57, "cooldown_days": 30},
    )


async def test_cap_of_ten_drops_the_lowest_score(tmp_path: Path) -> None:
    _, store = await open_store(tmp_path)
    for i in range(10):  # ten live bullets with scores 900 - 100*k (k = negatives)
        row = await store.add_candidate("alice", f"skill{i}", f"text {i}", Counts(5, 5), T0)
        await store.update(row.id, T0, state="live", live_since_ms=T0, score=100 * i + 7)
    weakest = (await store.tenant("alice", ("live",)))[0]
    newcomer = await promote(store, "alice", "deploy", (1, 10))
    live = await store.tenant("alice", ("live",))
    assert len(live) == 10 and newcomer in {b.bid for b in live}
    dropped = await store.get(weakest.id)
    assert dropped is not None and (dropped.state, dropped.outcome) == ("rolled_back", "cap")
    assert dropped.cooldown_until_ms > T0


async def test_tenant_isolation(tmp_path: Path) -> None:
    _, store = await open_store(tmp_path)
    await promote(store, "alice", "deploy", (1, 10))
    await shadow_bullet(store, "bob", "review")
    view = LearnedStyle(store)
    home = tmp_path / "home"
    alice, bob, carol = (TenantDirs.of(home, t) for t in ("alice", "bob", "carol"))
    for tenant in ("alice", "bob", "carol"):
        await store.changes.prepare(tenant)  # what a turn does before its prompt
    assert [r.state for r in view.bullets(alice)] == ["live"]
    assert [r.state for r in view.bullets(bob)] == ["shadow"]
    assert view.bullets(carol) == []
    assert all("deploy" not in text for _, text, _ in view.bullets(bob))
    assert all("review" not in text for _, text, _ in view.bullets(alice))


async def test_events_pass_redaction_whole_and_carry_no_text(tmp_path: Path) -> None:
    _, store = await open_store(tmp_path)
    await promote(store, "alice", "deploy", (1, 10))
    sw, audit, _ = sweeper(store, outage(), "OVERFIT")
    recs = signals("alice", "review", 6, 0, T0 + 3 * DAY, tag="r")
    recs += signals("alice", "deploy", 9, 0, T0 + 3 * DAY + 1, tag="bad")
    recs += signals("alice", "write.docs", 6, 0, T0 + 3 * DAY, tag="w")
    await sw.sweep(recs, T0 + 4 * DAY)
    seen = {e[0] for e in audit.events}
    assert seen == {"style.candidate", "style.judged", "style.rolled_back"}
    texts = [b.text for b in await store.all()]
    for event, _, details in audit.events:
        assert redact(details) == details, event
        assert set(details) == set(EVENTS[event]), event
        flat = repr(details)
        assert all(t not in flat for t in texts) and "double-check" not in flat


async def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    _, store = await open_store(tmp_path)
    bid = await shadow_bullet(store)
    sw, audit, backend = sweeper(store)
    recs = cohort_records("alice", "deploy", bid, T0, with_=(1, 10), without=(9, 10))
    recs += signals("alice", "review", 6, 0, T0)
    report = await sw.sweep(recs, T0 + 3 * DAY, dry_run=True)
    assert report.promoted == 1 and report.candidates == 1
    assert [e[0] for e in report.events] == ["style.promoted", "style.candidate"]
    assert audit.events == [] and backend.requests == []
    assert [b.state for b in await store.tenant("alice")] == ["shadow"]
    assert await store.last_sweep() is not None and (await store.last_sweep()).at_ms == T0  # type: ignore[union-attr]
