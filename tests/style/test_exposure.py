"""Which turns a bullet's experiment counts: every turn about its skill, offered or not.

The pieces behind tests/style/test_starvation.py: the request decides what a
turn was about (`skills_asked`), the observer records it as `relevant` without
moving any grade, the aggregation counts it for live and shadow bullets but
never for candidates (those stay on what the grades count).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bridge.core.agent import AgentResult
from bridge.core.filecache import FileCache
from bridge.core.sessions import Session, SessionKey
from bridge.skills.files import Skill
from bridge.skills.grades import SkillGrades, TurnLog
from bridge.skills.observer import SkillsObserver
from bridge.skills.usage import skills_asked
from bridge.style.aggregate import cohorts, graded_turns, skill_counts, turn_counts
from bridge.style.judge import Judge
from bridge.style.rules import Counts
from bridge.style.sweep import Sweeper
from bridge.types.audit_sink import MemoryAudit, TurnEvents
from bridge.types.backend import ChatMessage
from bridge.types.messages import Inbound
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import TurnContext
from tests.style.helpers import DAY, T0, FakeJudge, graded, msg_ids_with_bit, open_store

DEPLOY = Skill("deploy", "Ship a release of a service to staging or production", "", "")
CSV = Skill("csv_cleanup", "Normalise delimiters, trim whitespace and deduplicate rows", "", "")


@pytest.mark.parametrize(
    ("request_text", "expected"),
    [
        ("How do I deploy the api?", ["deploy"]),
        ("the deployment failed again", ["deploy"]),
        ("Wie deploye ich den Scheduler?", ["deploy"]),
        ("Der Dienst wird mit Helm deployt", ["deploy"]),
        ("please clean up this csv file", ["csv_cleanup"]),
        ("Kannst du die CSV bereinigen? csv cleanup bitte", ["csv_cleanup"]),
        ("ship a release of the billing service to production", ["deploy"]),
        ("tell me a joke about cats", []),
        ("The CSV has 3 rows.", []),
        ("what's the weather in Graz", []),
    ],
)
def test_what_a_request_is_about(request_text: str, expected: list[str]) -> None:
    assert skills_asked(request_text, [DEPLOY, CSV]) == expected


def _record(
    prev: str, signal: str, skills: list[str], relevant: list[str], ts: int
) -> dict[str, Any]:
    rec = graded("alice", ts, signal, skills, prev)
    rec["details"]["relevant"] = relevant
    return rec


def test_relevant_turns_feed_bullets_never_candidates() -> None:
    records = [_record(f"r{i}", "rejection", [], ["deploy"], T0 + i) for i in range(9)]
    records.append(_record("u0", "approval", ["deploy"], ["deploy", "Bad Name"], T0 + 20))
    turns = graded_turns(records)
    assert len(turns) == 10 and turns[-1].relevant == ()  # used wins; bad names dropped
    # candidates: only the turn whose reply used the skill (what the grades count)
    assert skill_counts(turns, T0, T0 + 100)[("alice", "deploy")].total == 1
    live = turn_counts(turns, "alice", "deploy", T0, T0 + 100)
    assert (live.total, live.negative) == (10, 9)
    with_, without = cohorts(turns, "alice", "deploy", "b-0001", T0, T0 + 100)
    assert with_.total + without.total == 10
    assert turn_counts(turns, "bob", "deploy", T0, T0 + 100).total == 0


async def test_relevant_alone_makes_no_candidate(tmp_path: Path) -> None:

    _, store = await open_store(tmp_path)
    records = [_record(f"r{i}", "rejection", [], ["deploy"], T0 - 1000 + i) for i in range(12)]
    report = await Sweeper(store, Judge(FakeJudge()), MemoryAudit()).sweep(records, T0)
    assert report.candidates == 0 and await store.tenant("alice") == []


async def test_a_shadow_ab_fed_only_by_relevant_turns_is_decided(tmp_path: Path) -> None:
    """The statistical safeguards still apply: 3 days, 5 turns per cohort, 5 points."""

    _, store = await open_store(tmp_path)
    row = await store.add_candidate("alice", "deploy", "text", Counts(6, 6), T0)
    await store.update(row.id, T0, state="shadow", shadow_since_ms=T0)
    bid = f"b-{row.id:04d}"
    recs = []
    for bit, negatives in ((1, 1), (0, 4)):  # with: 1/5 negative, without: 4/5
        for i, mid in enumerate(msg_ids_with_bit(bid, bit, 5, f"x{bit}-")):
            signal = "rejection" if i < negatives else "approval"
            recs.append(_record(mid, signal, [], ["deploy"], T0 + 60_000 * (i + 1)))
    sweeper = Sweeper(store, Judge(FakeJudge()), MemoryAudit())
    await sweeper.sweep(recs, T0 + 2 * DAY)
    assert (await store.tenant("alice"))[0].state == "shadow"  # before 3 days: waiting
    await sweeper.sweep(recs[:-1], T0 + 3 * DAY)  # 4 turns in a cohort: still too thin
    assert (await store.tenant("alice"))[0].state == "shadow"
    await sweeper.sweep(recs, T0 + 3 * DAY)
    [b] = await store.tenant("alice")
    assert (b.state, b.with_n, b.without_n) == ("live", 5, 5)


def _turn(dirs: TenantDirs, text: str, msg_id: str) -> TurnContext:
    return TurnContext(dirs, Inbound("web", "local", "c", text, msg_id), lambda: 5.0)


async def test_observer_records_what_the_request_was_about(tmp_path: Path) -> None:
    conn, _ = await open_store(tmp_path)
    dirs = TenantDirs.of(tmp_path, "t1").ensure()
    (dirs.skills / "deploy.md").write_text(f"---\ndescription: {DEPLOY.description}\n---\nsteps\n")
    grades = SkillGrades(conn)
    for _ in range(3):
        await grades.apply("t1", "deploy", "rejection", 1.0)  # graded below 0: not offered
    before = await grades.get("t1", "deploy")
    audit, events = MemoryAudit(), TurnEvents()
    observer = SkillsObserver(grades, TurnLog(conn), FileCache(), lambda: 5.0)
    reply = "Run the deploy script."
    end = await observer.after_turn(
        _turn(dirs, "how do I deploy?", "m1"), AgentResult(reply, 1), events
    )
    assert end is not None
    await conn.atomic(end.unit)  # the turn's end writes the turn-log row in its unit
    history = (ChatMessage("user", "how do I deploy?"), ChatMessage("assistant", reply))
    session = Session(SessionKey("t1", "web", "c"), history, 0, 0, 1, 0, 0)
    await observer.before_turn(_turn(dirs, "No, that's wrong.", "m2"), session, events)
    await events.flush(audit)
    assert audit.events[-1] == (
        "skill.outcome_graded",
        "t1",
        {"signal": "rejection", "skills": [], "prev_run_id": "m1", "relevant": ["deploy"]},
    )
    assert await grades.get("t1", "deploy") == before  # no grade moved: the reply did not use it
    assert "skill.graded" not in [e[0] for e in audit.events]
