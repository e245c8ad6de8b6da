"""Skill grades, the turn log (`bridge.skills.grades`) and the judge's daily counts
(`bridge.grading.judge_store`) on both backends: a grade's step is one upsert that clamps
and counts (racing steps from two connections all count), a turn is claimed for grading
exactly once, the grades' mirror the prompt reads is kept by the store's writes and read
again after another connection's; every write one statement."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path

import pytest

from bridge.grading.judge_store import JudgeDay, JudgeUsage
from bridge.loadout.db_changes import TableChanges, watching
from bridge.skills.grades import (
    AUTO_STEP,
    INITIAL_GRADE,
    MAX_GRADE,
    MIN_GRADE,
    OUTCOME_STEP,
    SkillGrades,
    TurnLog,
    turn_graded,
    turn_recorded,
)
from bridge.storage.protocol import Database
from bridge.storage.units import together
from tests.storage.conftest import OpenDb
from tests.storage.traced import traced
from tests.waits import until


async def test_a_new_skill_starts_at_the_initial_grade_and_moves_within_bounds(
    db: Database,
) -> None:
    grades = SkillGrades(db)
    g = await grades.get("alice", "deploy")
    assert (g.grade, g.updated_at, set(g.counts.values())) == (INITIAL_GRADE, None, {0})
    step, after = await grades.apply("alice", "deploy", "auto", 5.0)
    assert (step, after) == (AUTO_STEP, INITIAL_GRADE + AUTO_STEP)
    for _ in range(20):
        await grades.apply("alice", "deploy", "auto", 6.0)
    assert (await grades.get("alice", "deploy")).grade == MAX_GRADE
    for _ in range(20):
        await grades.apply("alice", "deploy", "rejection", 7.0)
    g = await grades.get("alice", "deploy")
    assert g.grade == MIN_GRADE
    assert (g.counts["auto"], g.counts["rejection"], g.updated_at) == (21, 20, 7.0)
    assert (await grades.get("bob", "deploy")).grade == INITIAL_GRADE  # per tenant
    _, first = await grades.apply("bob", "new", "rejection", 1.0)  # clamped on insert too
    assert first == INITIAL_GRADE + OUTCOME_STEP["rejection"]


async def test_a_late_grade_moves_one_signal_and_never_below_zero(db: Database) -> None:
    grades = SkillGrades(db)
    await grades.apply("alice", "s", "neutral", 1.0)
    step, after = await grades.revise("alice", "s", "neutral", "approval", 2.0)
    assert (step, after) == (OUTCOME_STEP["approval"], INITIAL_GRADE + OUTCOME_STEP["approval"])
    g = await grades.get("alice", "s")
    assert (g.counts["neutral"], g.counts["approval"]) == (0, 1)
    await grades.revise("alice", "s", "neutral", "rejection", 3.0)  # no neutral left: stays 0
    g = await grades.get("alice", "s")
    assert (g.counts["neutral"], g.counts["rejection"]) == (0, 1)
    await grades.revise("alice", "fresh", "neutral", "rephrase", 4.0)  # never graded
    g = await grades.get("alice", "fresh")
    assert (g.grade, g.counts["rephrase"], g.counts["neutral"]) == (
        INITIAL_GRADE + OUTCOME_STEP["rephrase"],
        1,
        0,
    )


async def test_snapshot_restore_and_reset(db: Database) -> None:
    grades = SkillGrades(db)
    assert await grades.snapshot("alice", "s") is None
    await grades.apply("alice", "s", "approval", 9.5)
    snap = await grades.snapshot("alice", "s")
    assert snap is not None and snap["approvals"] == 1 and snap["updated_at"] == 9.5
    await grades.apply("alice", "s", "rejection", 10.0)
    await grades.restore("alice", "s", snap)
    assert await grades.snapshot("alice", "s") == snap
    assert (await grades.get("alice", "s")).counts["rejection"] == 0
    await grades.restore("alice", "s", {"grade": "bad"})  # a damaged entry: starts fresh
    assert await grades.snapshot("alice", "s") is None
    await grades.restore("alice", "s", snap)
    await grades.reset("alice", "s")
    assert (await grades.get("alice", "s")).grade == INITIAL_GRADE
    assert await SkillGrades(db).all("alice") == {}


async def test_racing_steps_from_two_connections_all_count(open_db: OpenDb) -> None:
    one, two = SkillGrades(await open_db()), SkillGrades(await open_db())
    await asyncio.gather(
        *(g.apply("alice", "s", "auto", 1.0) for g in (one, two) for _ in range(5))
    )
    g = await SkillGrades(await open_db()).get("alice", "s")
    assert g.counts["auto"] == 10
    assert g.grade == MAX_GRADE  # 1000 + 10 x 300, clamped at 3000


async def test_the_mirror_is_kept_by_writes_and_read_again_after_anothers(
    open_db: OpenDb,
) -> None:
    """The prompt reads `cached` synchronously after `prepare`: own writes show at once;
    another connection's after its notify moved the generation and `prepare` read again."""
    mine, theirs = await open_db(), await open_db()
    changes = TableChanges(mine)
    grades = SkillGrades(mine, changes)
    stop = watching(changes)
    try:
        assert grades.cached("alice") is None
        assert changes.token(("skill_grades",), "alice") is None  # not read: not vouched
        await changes.prepare("alice")
        assert grades.cached("alice") == {}
        token = changes.token(("skill_grades",), "alice")
        assert token is not None
        await grades.apply("alice", "s", "auto", 1.0)
        assert grades.cached("alice")["s"].grade == INITIAL_GRADE + AUTO_STEP  # type: ignore[index]
        assert changes.token(("skill_grades",), "alice") != token
        generation = changes.generation
        await SkillGrades(theirs).apply("alice", "s", "rejection", 2.0)
        await until(lambda: changes.generation > generation, "the other connection's notify")
        token = changes.token(("skill_grades",), "alice")
        await changes.prepare("alice")
        cached = grades.cached("alice")
        assert cached is not None
        assert cached["s"].grade == INITIAL_GRADE + AUTO_STEP + OUTCOME_STEP["rejection"]
        assert changes.token(("skill_grades",), "alice") != token
        token = changes.token(("skill_grades",), "alice")
        changes.generation += 1  # a wake that changed nothing (e.g. our own notify)
        await changes.prepare("alice")
        assert changes.token(("skill_grades",), "alice") == token  # read again, equal
    finally:
        await stop()


async def test_a_turn_is_marked_graded_by_its_own_id(open_db: OpenDb) -> None:
    log = TurnLog(await open_db())
    assert await log.last("alice", "web", "c1") is None
    await log.record("alice", "web", "c1", "m1", ["a", "b"], 1.0, relevant=("c",))
    last = await log.last("alice", "web", "c1")
    assert last is not None and (last.msg_id, last.skills, last.graded, last.relevant) == (
        "m1",
        ["a", "b"],
        False,
        ("c",),
    )
    other = TurnLog(await open_db())  # another connection (another instance) sees it
    await other.mark_graded("alice", "web", "c1", "m1")
    assert (await log.last("alice", "web", "c1")).graded is True  # type: ignore[union-attr]
    await log.record("alice", "web", "c1", "m2", [], 2.0)  # the next turn: not graded yet
    last = await other.last("alice", "web", "c1")
    assert last is not None and (last.msg_id, last.skills, last.graded) == ("m2", [], False)
    assert await log.last("bob", "web", "c1") is None  # per tenant
    await log.record("alice", "web", "c2", "m3", ["x"], 3.0)
    await log.mark_graded("alice", "web", "c2", "other-id")  # not that turn: unchanged
    assert (await log.last("alice", "web", "c2")).graded is False  # type: ignore[union-attr]
    await log.mark_graded("alice", "web", "c2", "m3")
    assert (await log.last("alice", "web", "c2")).graded is True  # type: ignore[union-attr]
    # the same mark as a unit of a turn's end (`turn_graded`, with the next turn's row)
    await log.record("alice", "web", "c3", "m4", [], 4.0)
    db = await open_db()
    await db.atomic(partial(turn_graded, "alice", "web", "c3", "other-id"))
    assert (await log.last("alice", "web", "c3")).graded is False  # type: ignore[union-attr]
    await db.atomic(partial(turn_graded, "alice", "web", "c3", "m4"))
    assert (await log.last("alice", "web", "c3")).graded is True  # type: ignore[union-attr]


@pytest.mark.parametrize("graded", [False, True])
async def test_a_turns_row_after_its_end_is_the_same_without_the_graded_mark(
    open_db: OpenDb, graded: bool
) -> None:
    """The graded mark of the previous turn and the turn's own row in one unit (a turn's
    end) leave the row as the turn's row alone does: the mark is left out of that unit
    (skills/observer.py). Compared column by column, with the previous row marked or not."""
    db = await open_db()
    log = TurnLog(db)
    rows = []
    for chat, units in (
        ("with", lambda: (partial(turn_graded, "alice", "web", "with", "m1"),)),
        ("without", lambda: ()),
    ):
        await log.record("alice", "web", chat, "m1", ["a"], 1.0, relevant=("b",))
        if graded:
            await log.mark_graded("alice", "web", chat, "m1")
        mine = partial(turn_recorded, "alice", "web", chat, "m2", ["c", "d"], 2.0, ("e",))
        first, *more = (*units(), mine)
        await db.atomic(together(first, *more))
        rows.append(
            await db.fetch_one(
                "SELECT tenant, channel, msg_id, skills, at, graded, relevant FROM turn_log"
                " WHERE tenant = ? AND chat = ?",
                ("alice", chat),
            )
        )
    assert rows[0] is not None and tuple(rows[0]) == tuple(rows[1])  # type: ignore[arg-type]
    assert tuple(rows[0])[2:] == ("m2", "c\nd", 2.0, 0, "e")
    assert await db.fetch_value("SELECT COUNT(*) FROM turn_log") == 2  # one row per chat


async def test_judge_counts_add_up_across_connections(open_db: OpenDb) -> None:
    one, two = JudgeUsage(await open_db()), JudgeUsage(await open_db())
    assert await one.day("alice", "2026-01-01") == JudgeDay()
    await asyncio.gather(
        *(u.add("alice", "2026-01-01", "asked", 2) for u in (one, two) for _ in range(3))
    )
    await one.add("alice", "2026-01-01", "capped", 1)
    await one.add("alice", "2026-01-01", "ignored", 0)  # nothing: no row touched
    assert await two.day("alice", "2026-01-01") == JudgeDay(asked=12, capped=1)
    assert await two.day("bob", "2026-01-01") == JudgeDay()
    with pytest.raises(ValueError):
        await one.add("alice", "2026-01-01", "tokens", 1)  # type: ignore[arg-type]


async def test_each_write_is_one_statement(backend: str, tmp_path: Path) -> None:
    """SQLite's statements: no BEGIN; a step is one upsert (+ the notify), a turn's log
    one upsert, its graded mark one UPDATE."""
    if backend != "sqlite":
        pytest.skip("the statements SQLite ran")
    database, statements = await traced(tmp_path / "roost.db")
    try:
        grades, log = SkillGrades(database), TurnLog(database)
        await grades.all("alice")
        statements.clear()
        await grades.apply("alice", "s", "auto", 1.0)
        await grades.revise("alice", "s", "neutral", "approval", 2.0)
        await log.record("alice", "web", "c1", "m1", ["s"], 1.0)
        await log.mark_graded("alice", "web", "c1", "m1")
    finally:
        await database.aclose()
    ran = [s.split()[0].upper() for s in statements]
    assert "BEGIN" not in ran
    assert ran == ["INSERT", "INSERT", "INSERT", "INSERT", "INSERT", "UPDATE"], statements
