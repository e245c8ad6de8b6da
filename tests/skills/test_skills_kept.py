"""The skills a turn grades by are the files as they are now, though worked out once per
change (`kept_skills`): a skill written, edited, added or removed between two turns is
what the next turn's grading and the prompt's view see, with the directory watched
(inotify) and without (stat). The grades a turn writes are notified once, not once a
skill, and another mirror sees them all."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bridge.app.database import open_database
from bridge.core.agent import AgentResult
from bridge.core.dirwatch import DirWatch
from bridge.core.filecache import FileCache
from bridge.loadout.db_changes import TOPIC, watching
from bridge.skills.files import Skill, kept_skills, read_skills
from bridge.skills.grades import AUTO_STEP, INITIAL_GRADE, SkillGrades, TurnLog
from bridge.skills.observer import SkillsObserver
from bridge.skills.view import GradedSkills
from bridge.storage.protocol import Database
from bridge.types.audit_sink import TurnEvents
from bridge.types.messages import Inbound
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import TurnContext
from tests.waits import until

CSV = Skill("csv_cleanup", "Normalise delimiters, trim whitespace and deduplicate rows", "", "")
TRIP = Skill("trip_planning", "Plan train journeys with connections and seat reservations", "", "")


def write(dirs: TenantDirs, skill: Skill) -> None:
    (dirs.skills / f"{skill.name}.md").write_text(
        f"---\nname: {skill.name}\ndescription: {skill.description}\n---\n{skill.body}\n"
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return Path(os.path.realpath(tmp_path))


@pytest.fixture(params=["watched", "stat"])
def cache(request: pytest.FixtureRequest, root: Path) -> Iterator[FileCache]:
    watch = DirWatch.open((str(root),)) if request.param == "watched" else None
    if request.param == "watched" and watch is None:
        pytest.skip("no inotify on a local file system here")
    yield FileCache(watch=watch)
    if watch is not None:
        watch.close()


@pytest.fixture
async def conn(tmp_path: Path) -> AsyncIterator[Database]:
    db = await open_database(tmp_path / "db")
    yield db
    await db.aclose()


async def test_each_turn_grades_by_the_skill_files_as_they_are(
    root: Path, conn: Database, cache: FileCache
) -> None:
    dirs = TenantDirs.of(root, "t1").ensure()
    observer = SkillsObserver(SkillGrades(conn), TurnLog(conn), cache, lambda: 5.0)
    view = GradedSkills(SkillGrades(conn), cache)
    n = 0

    async def used(reply: str) -> list[str]:
        nonlocal n
        n += 1
        events = TurnEvents()
        turn = TurnContext(dirs, Inbound("web", "local", "c", "hi", f"m{n}"), lambda: 5.0)
        await observer.after_turn(turn, AgentResult(reply, 1), events)
        return [e[2]["name"] for e in events.events if e[0] == "skill.graded"]

    trains = "Your train journeys: connections checked, seat reservations made."
    assert await used(trains) == []  # no skill yet
    write(dirs, TRIP)
    assert await used(trains) == ["trip_planning"]
    assert await used(trains) == ["trip_planning"]  # kept: the same answer
    write(dirs, Skill("trip_planning", "Knit scarves from merino wool", "", ""))  # edited
    assert await used(trains) == []
    assert await used("I knit two scarves from merino wool.") == ["trip_planning"]
    write(dirs, CSV)  # added
    both = "Knit scarves from merino wool; normalised delimiters, trimmed whitespace, rows"
    assert await used(both + " deduplicated.") == ["csv_cleanup", "trip_planning"]
    assert [r[0] for r in view.active(dirs)] == ["csv_cleanup", "trip_planning"]
    (dirs.skills / "trip_planning.md").unlink()  # removed
    assert await used(both + " deduplicated.") == ["csv_cleanup"]
    assert [r[0] for r in view.active(dirs)] == ["csv_cleanup"]
    assert kept_skills(dirs, cache) == read_skills(dirs, cache)


async def test_a_turn_grading_several_skills_notifies_once_and_others_see_them_all(
    root: Path, conn: Database
) -> None:
    """Three skills the reply used: three grades written, ONE notify of the prompt rows
    (not one a skill), and a mirror kept elsewhere reads all three again after it."""
    dirs = TenantDirs.of(root, "t1").ensure()
    for skill in (CSV, TRIP, Skill("knit", "Knit scarves from merino wool", "", "")):
        write(dirs, skill)
    grades = SkillGrades(conn)
    observer = SkillsObserver(grades, TurnLog(conn), FileCache(), lambda: 5.0)
    theirs = SkillGrades(conn)  # another process's mirror: read again at a notify
    stop = watching(theirs.changes)
    try:
        await theirs.changes.subscribed()
        await theirs.changes.prepare("t1")
        assert theirs.cached("t1") == {}
        generation = theirs.changes.generation
        reply = "I used csv_cleanup, trip_planning and knit."
        turn = TurnContext(dirs, Inbound("web", "local", "c", "hi", "m1"), lambda: 5.0)
        events = TurnEvents()
        await observer.after_turn(turn, AgentResult(reply, 1), events)
        assert len([e for e in events.events if e[0] == "skill.graded"]) == 3
        assert await conn.fetch_value("SELECT n FROM storage_notify WHERE topic = ?", (TOPIC,)) == 1
        await until(lambda: theirs.changes.generation > generation, "the turn's notify")
        await theirs.changes.prepare("t1")
        seen = theirs.cached("t1")
        assert seen is not None
        assert {n: g.grade for n, g in seen.items()} == dict.fromkeys(
            ("csv_cleanup", "knit", "trip_planning"), INITIAL_GRADE + AUTO_STEP
        )
    finally:
        await stop()
