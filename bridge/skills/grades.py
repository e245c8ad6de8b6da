"""Skill grades in SQLite: one row per (tenant, skill) with signal counts.

A skill nobody graded yet stands at `INITIAL_GRADE` (> 0, so a new skill is
offered to the model); grades move by the steps below and stay within
[`MIN_GRADE`, `MAX_GRADE`]. Grades are stored as integer thousandths so
nothing depends on float comparison.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import NamedTuple

INITIAL_GRADE = 1000  # thousandths
MIN_GRADE, MAX_GRADE = -3000, 3000
AUTO_STEP = 300  # a reply used the skill
OUTCOME_STEP = {"approval": 200, "rejection": -500, "rephrase": -300, "neutral": 0}
SIGNALS = ("approval", "rejection", "rephrase", "neutral", "auto")


@dataclass(frozen=True, slots=True)
class Grade:
    name: str
    grade: int  # thousandths
    counts: dict[str, int]
    updated_at: float | None

    @property
    def value(self) -> float:
        return self.grade / 1000


class SkillGrades:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._db = conn

    def all(self, tenant: str) -> dict[str, Grade]:
        rows = self._db.execute(
            "SELECT name, grade, approvals, rejections, rephrases, neutrals, autos, updated_at"
            " FROM skill_grades WHERE tenant=?",
            (tenant,),
        ).fetchall()
        return {
            r[0]: Grade(r[0], r[1], dict(zip(SIGNALS, r[2:7], strict=True)), r[7]) for r in rows
        }

    def get(self, tenant: str, name: str) -> Grade:
        return self.all(tenant).get(name) or Grade(
            name, INITIAL_GRADE, dict.fromkeys(SIGNALS, 0), None
        )

    def apply(self, tenant: str, name: str, signal: str, now: float) -> Applied:
        """Record one signal; returns the step and the grade after it."""
        step = AUTO_STEP if signal == "auto" else OUTCOME_STEP[signal]
        column = {
            "approval": "approvals",
            "rejection": "rejections",
            "rephrase": "rephrases",
            "neutral": "neutrals",
            "auto": "autos",
        }[signal]
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(
                "INSERT OR IGNORE INTO skill_grades (tenant, name, grade) VALUES (?, ?, ?)",
                (tenant, name, INITIAL_GRADE),
            )
            db.execute(
                f"UPDATE skill_grades SET grade = MAX(?, MIN(?, grade + ?)),"
                f" {column} = {column} + 1, updated_at = ? WHERE tenant=? AND name=?",
                (MIN_GRADE, MAX_GRADE, step, now, tenant, name),
            )
            (after,) = db.execute(
                "SELECT grade FROM skill_grades WHERE tenant=? AND name=?", (tenant, name)
            ).fetchone()
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return Applied(step, after)

    def revise(self, tenant: str, name: str, old: str, new: str, now: float) -> Applied:
        """A late grade (the outcome judge): move one signal from `old` to `new`."""
        step = OUTCOME_STEP[new] - OUTCOME_STEP[old]
        was, now_col = _COLUMN[old], _COLUMN[new]
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(
                "INSERT OR IGNORE INTO skill_grades (tenant, name, grade) VALUES (?, ?, ?)",
                (tenant, name, INITIAL_GRADE),
            )
            db.execute(
                f"UPDATE skill_grades SET grade = MAX(?, MIN(?, grade + ?)),"
                f" {was} = MAX(0, {was} - 1), {now_col} = {now_col} + 1, updated_at = ?"
                " WHERE tenant=? AND name=?",
                (MIN_GRADE, MAX_GRADE, step, now, tenant, name),
            )
            (after,) = db.execute(
                "SELECT grade FROM skill_grades WHERE tenant=? AND name=?", (tenant, name)
            ).fetchone()
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return Applied(step, after)


_COLUMN = {
    "approval": "approvals",
    "rejection": "rejections",
    "rephrase": "rephrases",
    "neutral": "neutrals",
}


class Applied(NamedTuple):
    """One signal applied to a grade, both in thousandths."""

    step: int
    grade: int


class LastTurn(NamedTuple):
    """A chat's last answered turn."""

    msg_id: str
    skills: list[str]
    graded: bool  # already outcome-graded


class TurnLog:
    """The last answered turn per chat: its message id and the skills it used."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._db = conn

    def last(self, tenant: str, channel: str, chat: str) -> LastTurn | None:
        """The chat's last answered turn, if any."""
        row = self._db.execute(
            "SELECT msg_id, skills, graded FROM turn_log WHERE tenant=? AND channel=? AND chat=?",
            (tenant, channel, chat),
        ).fetchone()
        if row is None:
            return None
        return LastTurn(row[0], [s for s in row[1].split("\n") if s], bool(row[2]))

    def mark_graded(self, tenant: str, channel: str, chat: str, msg_id: str) -> None:
        self._db.execute(
            "UPDATE turn_log SET graded=1 WHERE tenant=? AND channel=? AND chat=? AND msg_id=?",
            (tenant, channel, chat, msg_id),
        )

    def record(
        self, tenant: str, channel: str, chat: str, msg_id: str, skills: list[str], now: float
    ) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO turn_log (tenant, channel, chat, msg_id, skills, at, graded)"
            " VALUES (?, ?, ?, ?, ?, ?, 0)",
            (tenant, channel, chat, msg_id, "\n".join(skills), now),
        )
