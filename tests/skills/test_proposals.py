"""skill-forge's decisions and bounds: names, sizes, expiry (injected clock), the
per-chat cap, what counts as a small edit, diffs that cannot break their fence, and a
journal that never writes outside skills/."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.app.database import open_database
from bridge.skills import journal
from bridge.skills.forge import SkillForge
from bridge.skills.grades import INITIAL_GRADE, SkillGrades
from bridge.skills.proposals import (
    MAX_PER_CHAT,
    SMALL_EDIT,
    TTL_S,
    Proposal,
    ProposalBook,
    ProposalRefused,
    check,
    diff,
    keeps_grade,
    render,
)
from bridge.storage.protocol import Database
from bridge.types.audit_sink import MemoryAudit
from bridge.types.tenant_dirs import TenantDirs

KEY = ("alice", "web", "c1")
STEPS = "\n".join(f"{i}. step number {i}: do the thing carefully" for i in range(1, 11))


@pytest.fixture
async def conn(tmp_path: Path) -> AsyncIterator[Database]:
    db = await open_database(tmp_path / "db")
    yield db
    await db.aclose()


def proposal(name: str, at: float, body: str = "1. do it") -> Proposal:
    return Proposal(name, "d", body, render(name, "d", "", body), None, at)


@pytest.mark.parametrize(
    "name", ["", "Deploy", "de ploy", "../x", "a/b", "-x", "x" * 65, "déploy", "x.md"]
)
def test_names_are_file_stems_only(name: str) -> None:
    with pytest.raises(ProposalRefused, match="name"):
        check(name, "d", "b")


def test_fields_are_bounded() -> None:
    assert check("ok_name-2", "  one line  ", "\n body \n") == ("one line", "body")
    for description in ("", "two\nlines", "x" * 201):
        with pytest.raises(ProposalRefused, match="description"):
            check("x", description, "b")
    for body in ("", "  ", "x" * 4001, "---\nname: evil\n---"):
        with pytest.raises(ProposalRefused, match="body"):
            check("x", "d", body)


def test_proposals_expire_after_a_day() -> None:
    book = ProposalBook()
    book.put(KEY, proposal("a", 1000.0))
    assert book.get(KEY, "a", 1000.0 + TTL_S - 1) is not None
    assert book.get(KEY, "a", 1000.0 + TTL_S) is None
    assert book.pending(KEY, 1000.0) == []  # gone for good once seen expired


def test_per_chat_cap_and_replacement() -> None:
    book = ProposalBook()
    for i in range(MAX_PER_CHAT):
        book.put(KEY, proposal(f"s{i}", 10.0))
    book.put(KEY, proposal("s0", 11.0, "1. again"))  # the same name replaces, never counts twice
    assert book.get(KEY, "s0", 12.0).body == "1. again"  # type: ignore[union-attr]
    with pytest.raises(ProposalRefused, match=f"already has {MAX_PER_CHAT}"):
        book.put(KEY, proposal("one_more", 12.0))
    book.put(("alice", "web", "c2"), proposal("one_more", 12.0))  # another chat has its own
    assert book.pending(("bob", "web", "c1"), 12.0) == []
    book.put(KEY, proposal("one_more", 11.0 + TTL_S))  # the old ones expired meanwhile
    assert [p.name for p in book.pending(KEY, 11.0 + TTL_S)] == ["one_more"]


def test_small_edit_threshold() -> None:
    assert SMALL_EDIT == 0.8
    one_word = STEPS.replace("step number 4", "stage number 4")
    assert keeps_grade(STEPS, one_word)
    half = "\n".join(STEPS.splitlines()[:5]) + "\n" + "completely different text " * 8
    assert not keeps_grade(STEPS, half)
    assert not keeps_grade(STEPS, "Call Bob.")


def test_diff_fence_outlasts_backticks_in_the_body() -> None:
    body = "Run:\n```\nmake deploy\n```\nthen ````check````"
    shown = diff("x", None, render("x", "d", "", body))
    assert shown.startswith("`````markdown\n") and shown.endswith("\n`````")
    edit = diff("x", render("x", "d", "", "a"), render("x", "d", "", "b"))
    assert "-a\n+b" in edit and edit.startswith("```diff\n--- skills/x.md (now)")


async def test_an_edit_keeps_when_and_a_moved_file_is_not_overwritten(
    tmp_path: Path, conn: Database
) -> None:
    dirs = TenantDirs.of(tmp_path, "alice").ensure()
    (dirs.skills / "x.md").write_text("---\ndescription: old\nwhen: on fridays\n---\n" + STEPS)
    forge = SkillForge(SkillGrades(conn), MemoryAudit(), lambda d: {})
    p = await forge.propose(dirs, KEY, "x", "new", STEPS + "\n11. done", 5.0)
    assert "when: on fridays" in p.text and not p.created
    (dirs.skills / "x.md").write_text("---\ndescription: hand edit\n---\nmine")
    with pytest.raises(ProposalRefused, match="changed after this proposal"):
        await forge.save(dirs, p, 6.0)
    assert (dirs.skills / "x.md").read_text().endswith("mine")


async def test_vault_values_are_refused(tmp_path: Path, conn: Database) -> None:
    dirs = TenantDirs.of(tmp_path, "alice").ensure()
    forge = SkillForge(SkillGrades(conn), MemoryAudit(), lambda d: {"db": "hunter2-pass"})
    with pytest.raises(ProposalRefused, match="vault secret"):
        await forge.propose(dirs, KEY, "x", "d", "log in with hunter2-pass", 5.0)


async def test_journal_never_writes_outside_skills(tmp_path: Path, conn: Database) -> None:
    dirs = TenantDirs.of(tmp_path, "alice").ensure()
    grades = SkillGrades(conn)
    audit = MemoryAudit()
    forge = SkillForge(grades, audit, lambda d: {})
    forged = [{"op": "rm", "name": "../../evil", "at": 1, "before": "x", "grade": None}]
    (dirs.skills / journal.JOURNAL_NAME).write_text(json.dumps(forged))
    assert await forge.undo(dirs) is None
    assert not (tmp_path / "evil.md").exists() and not (dirs.root / "evil.md").exists()
    (dirs.skills / journal.JOURNAL_NAME).write_text("{not json")
    assert await forge.undo(dirs) is None and audit.events == []


async def test_undo_of_a_new_skill_restores_an_old_grade_row(
    tmp_path: Path, conn: Database
) -> None:
    """A new skill under a name that was graded before (file removed by hand) starts fresh;
    undo puts the old row back."""
    dirs = TenantDirs.of(tmp_path, "alice").ensure()
    grades = SkillGrades(conn)
    await grades.apply("alice", "x", "rejection", 1.0)
    forge = SkillForge(grades, MemoryAudit(), lambda d: {})
    p = await forge.propose(dirs, KEY, "x", "d", "1. do it", 5.0)
    saved = await forge.save(dirs, p, 6.0)
    assert saved.created and (await grades.get("alice", "x")).grade == INITIAL_GRADE
    await forge.undo(dirs)
    assert (await grades.get("alice", "x")).grade == INITIAL_GRADE - 500
    assert not (dirs.skills / "x.md").exists()
