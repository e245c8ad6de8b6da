"""Skills: files, usage detection, grades in SQLite, grading around turns, block 7 view."""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.app.build import Roost
from bridge.app.database import open_database
from bridge.core.agent import AgentResult
from bridge.core.config import Settings
from bridge.core.filecache import FileCache
from bridge.core.sessions import Session, SessionKey
from bridge.skills.files import Skill, read_skills
from bridge.skills.grades import INITIAL_GRADE, Applied, SkillGrades, TurnLog
from bridge.skills.observer import SkillsObserver
from bridge.skills.usage import skills_used
from bridge.skills.view import GradedSkills
from bridge.storage.protocol import Database
from bridge.types.audit_sink import MemoryAudit, TurnEvents
from bridge.types.backend import ChatMessage
from bridge.types.messages import Inbound
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import TurnContext
from tests.conftest import web_msg

CSV = Skill(
    "csv_cleanup",
    "Normalise delimiters, trim whitespace and deduplicate rows of a CSV export",
    "the user pastes CSV",
    "1. detect the delimiter\n2. ...",
)
TRIP = Skill("trip_planning", "Plan train journeys with connections and seat reservations", "", "")


def write_skill(dirs: TenantDirs, skill: Skill) -> None:
    (dirs.skills / f"{skill.name}.md").write_text(
        f"---\nname: {skill.name}\ndescription: {skill.description}\nwhen: {skill.when}\n---\n"
        f"{skill.body}\n"
    )


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Using csv_cleanup: I trimmed the fields.", ["csv_cleanup"]),
        ("I applied the CSV cleanup steps.", ["csv_cleanup"]),
        (
            "I normalised the delimiters, trimmed whitespace and removed duplicate rows.",
            ["csv_cleanup"],
        ),
        (
            "Your train leaves at 9; the connection in Fulda has a seat reservation.",
            ["trip_planning"],
        ),
        ("Here is a poem about autumn.", []),
        ("The CSV has 3 rows.", []),
    ],
)
def test_usage_by_name_or_paraphrase(reply: str, expected: list[str]) -> None:
    assert skills_used(reply, [CSV, TRIP]) == expected


@pytest.fixture
async def conn(tmp_path: Path) -> AsyncIterator[Database]:
    db = await open_database(tmp_path / "db")
    yield db
    await db.aclose()


async def test_grades_move_within_bounds(conn: Database) -> None:
    grades = SkillGrades(conn)
    assert (await grades.get("t", "x")).grade == INITIAL_GRADE
    assert await grades.apply("t", "x", "auto", 1.0) == (300, 1300)
    for _ in range(20):
        await grades.apply("t", "x", "rejection", 2.0)
    g = await grades.get("t", "x")
    assert g.grade == -3000 and g.counts["rejection"] == 20 and g.counts["auto"] == 1
    assert (await grades.get("other", "x")).grade == INITIAL_GRADE  # per tenant


def _turn(dirs: TenantDirs, text: str, msg_id: str) -> TurnContext:
    return TurnContext(dirs, Inbound("web", "local", "c", text, msg_id), lambda: 5.0)


def _session(*pairs: tuple[str, str]) -> Session:
    history = tuple(
        m for u, a in pairs for m in (ChatMessage("user", u), ChatMessage("assistant", a))
    )
    return Session(SessionKey("t1", "web", "c"), history, 0, 0, len(pairs), 0, 0)


async def test_outcome_grades_the_skills_the_previous_reply_used(
    tmp_path: Path, conn: Database
) -> None:
    dirs = TenantDirs.of(tmp_path, "t1").ensure()
    write_skill(dirs, CSV)
    write_skill(dirs, TRIP)
    audit, grades = MemoryAudit(), SkillGrades(conn)
    observer = SkillsObserver(grades, TurnLog(conn), FileCache(), lambda: 5.0)

    reply = "Using csv_cleanup I removed 3 duplicate rows."
    events = TurnEvents()
    end = await observer.after_turn(
        _turn(dirs, "clean this csv", "m1"), AgentResult(reply, 1), events
    )
    await conn.atomic(end.unit)  # the turn's end writes the turn-log row in its unit
    await events.flush(audit)
    assert (await grades.get("t1", "csv_cleanup")).grade == INITIAL_GRADE + 300
    assert audit.events[-1][0] == "skill.graded"

    session = _session(("clean this csv", reply))
    mark = await observer.before_turn(
        _turn(dirs, "no, that's wrong, the rows were not duplicates", "m2"), session, events
    )
    assert mark is not None
    await mark.alone()  # the turn m2 ended without its end's unit (e.g. its model failed)
    await events.flush(audit)
    names = [e[0] for e in audit.events]
    assert names[-2:] == ["outcome.graded", "skill.outcome_graded"]
    graded = audit.events[-1][2]
    assert graded == {"signal": "rejection", "skills": ["csv_cleanup"], "prev_run_id": "m1"}
    assert (await grades.get("t1", "csv_cleanup")).grade == INITIAL_GRADE + 300 - 500
    assert (await grades.get("t1", "trip_planning")).counts["rejection"] == 0

    # the same previous turn is never graded twice (e.g. the next message is retried)
    assert (
        await observer.before_turn(_turn(dirs, "no, wrong again", "m2b"), session, events) is None
    )
    await events.flush(audit)
    assert [e[0] for e in audit.events] == names


class Failing(SkillGrades):
    """Grades whose outcome write fails (e.g. the database went away mid-grading); the
    reply's own auto-grade goes through."""

    async def _apply(
        self, tenant: str, name: str, signal: str, now: float, *, notify: bool
    ) -> Applied:  # every write of a grade (`apply` and `apply_all`) goes through it
        if signal != "auto":
            raise RuntimeError("the grade was not written")
        return await super()._apply(tenant, name, signal, now, notify=notify)


async def test_grading_that_fails_partway_still_marks_the_turn_graded(
    tmp_path: Path, conn: Database
) -> None:
    """Whatever was applied of a failed grading must not be applied again by the next
    message: the mark is written at once, not left to the turn's end."""
    dirs = TenantDirs.of(tmp_path, "t1").ensure()
    write_skill(dirs, CSV)
    log = TurnLog(conn)
    observer = SkillsObserver(Failing(conn), log, FileCache(), lambda: 5.0)
    reply = "Using csv_cleanup I removed 3 duplicate rows."
    end = await observer.after_turn(
        _turn(dirs, "clean this csv", "m1"), AgentResult(reply, 1), TurnEvents()
    )
    await conn.atomic(end.unit)
    session = _session(("clean this csv", reply))
    with pytest.raises(RuntimeError):
        await observer.before_turn(_turn(dirs, "no, that's wrong", "m2"), session, TurnEvents())
    last = await log.last("t1", "web", "c")
    assert last is not None and last.msg_id == "m1" and last.graded
    again = await observer.before_turn(_turn(dirs, "wrong!", "m3"), session, TurnEvents())
    assert again is None


async def test_view_offers_only_skills_above_zero(tmp_path: Path, conn: Database) -> None:
    dirs = TenantDirs.of(tmp_path, "t1").ensure()
    write_skill(dirs, CSV)
    write_skill(dirs, TRIP)
    grades = SkillGrades(conn)
    for _ in range(3):
        await grades.apply("t1", "trip_planning", "rejection", 1.0)
    await grades.all("t1")  # what a turn's `prepare` reads before the prompt's view
    view = GradedSkills(grades, FileCache())
    rows = view.active(dirs)
    assert [r[0] for r in rows] == ["csv_cleanup"]
    assert "when: the user pastes CSV" in rows[0][1]
    other = TenantDirs.of(tmp_path, "t2").ensure()
    assert view.active(other) == []
    write_skill(other, CSV)
    assert [r[0] for r in view.active(other)] == ["csv_cleanup"]  # not read: initial grade


def test_skill_files_parse_front_matter(tmp_path: Path) -> None:
    dirs = TenantDirs.of(tmp_path, "t1").ensure()
    write_skill(dirs, CSV)
    (dirs.skills / "Bad Name.md").write_text("ignored")
    (dirs.skills / "notes.txt").write_text("ignored")
    assert read_skills(dirs, FileCache()) == [CSV]
    assert os.stat(dirs.skills).st_mode & 0o077 == 0


async def test_skills_command_names_no_server_path(roost: Roost, settings: Settings) -> None:
    """/skills tells the person where skills go without showing the server's file system."""
    empty = (await roost.core.handle(web_msg("/skills", 1), None)).text
    dirs = roost.tenant_dirs("local")
    write_skill(dirs, CSV)
    listed = (await roost.core.handle(web_msg("/skills", 2), None)).text
    shown = (await roost.core.handle(web_msg("/skill show csv_cleanup", 3), None)).text
    assert "skills/<name>.md" in empty and "csv_cleanup" in listed and "csv_cleanup" in shown
    for reply in (empty, listed, shown):
        assert str(settings.home) not in reply
        assert str(dirs.root) not in reply
        assert not re.search(r"(^|\s)/[\w.-]+/", reply), reply


async def test_a_scheduled_prompt_does_not_grade_the_previous_reply(
    tmp_path: Path, conn: Database
) -> None:
    """A recurring job's prompt runs as a turn of the chat, but the person did not write
    it in reaction to the last answer: no outcome is graded from it."""
    dirs = TenantDirs.of(tmp_path, "t1").ensure()
    write_skill(dirs, CSV)
    audit, grades = MemoryAudit(), SkillGrades(conn)
    observer = SkillsObserver(grades, TurnLog(conn), FileCache(), lambda: 5.0)
    reply = "Using csv_cleanup I removed 3 duplicate rows."
    events = TurnEvents()
    end = await observer.after_turn(
        _turn(dirs, "clean this csv", "m1"), AgentResult(reply, 1), events
    )
    await conn.atomic(end.unit)  # the turn's end writes the turn-log row in its unit
    before = (await grades.get("t1", "csv_cleanup")).grade
    job = Inbound("web", "local", "c", "no, wrong: summarise the news", "job:x:1", scheduled=True)
    await observer.before_turn(
        TurnContext(dirs, job, lambda: 5.0), _session(("clean this csv", reply)), events
    )
    await events.flush(audit)
    assert "outcome.graded" not in [e[0] for e in audit.events]
    assert (await grades.get("t1", "csv_cleanup")).grade == before


class NoAuto(SkillGrades):
    """Grades whose auto-grade write fails (a full disk: the turn goes on without it)."""

    async def _apply(
        self, tenant: str, name: str, signal: str, now: float, *, notify: bool
    ) -> Applied:  # every write of a grade (`apply` and `apply_all`) goes through it
        if signal == "auto":
            raise OSError(28, "No space left on device")
        return await super()._apply(tenant, name, signal, now, notify=notify)


async def test_the_graded_mark_is_left_out_of_an_end_that_records_the_turns_row(
    tmp_path: Path, conn: Database
) -> None:
    """The mark before the turn's own row in its end's unit is left out (that upsert
    rewrites the chat's one row); a turn with no row of its own after it (its after-turn
    step failed) or that ends without that unit still writes the mark."""
    dirs = TenantDirs.of(tmp_path, "t1").ensure()
    write_skill(dirs, CSV)
    log = TurnLog(conn)
    observer = SkillsObserver(NoAuto(conn), log, FileCache(), lambda: 5.0)
    session = _session(("hello", "Hi."))
    first = await observer.after_turn(
        _turn(dirs, "hello", "m1"), AgentResult("Hi.", 1), TurnEvents()
    )
    await conn.atomic(first.unit)

    turn = _turn(dirs, "thanks", "m2")
    mark = await observer.before_turn(turn, session, TurnEvents())
    assert mark is not None
    with pytest.raises(OSError):  # no row of its own: the end's unit holds the mark alone
        await observer.after_turn(turn, AgentResult("Using csv_cleanup.", 1), TurnEvents())
    assert [s.sql.split()[0] for s in mark.unit()] == ["UPDATE"]
    await conn.atomic(mark.unit)
    assert (await log.last("t1", "web", "c")).graded is True  # type: ignore[union-attr]
    assert observer._marks == {}  # nothing held after the turn

    await conn.execute("UPDATE turn_log SET graded = 0")
    turn = _turn(dirs, "thanks again", "m3")
    mark = await observer.before_turn(turn, session, TurnEvents())
    assert mark is not None
    end = await observer.after_turn(turn, AgentResult("Glad to help.", 1), TurnEvents())
    assert list(mark.unit()) == []  # its row follows in the same unit: nothing to write
    await conn.atomic(mark.unit)
    await conn.atomic(end.unit)
    last = await log.last("t1", "web", "c")
    assert last is not None and (last.msg_id, last.graded) == ("m3", False)
    assert observer._marks == {}

    turn = _turn(dirs, "and once more", "m4")
    mark = await observer.before_turn(turn, session, TurnEvents())
    assert mark is not None
    await mark.alone()  # the turn ended without its end's unit
    assert (await log.last("t1", "web", "c")).graded is True  # type: ignore[union-attr]
    assert observer._marks == {}
