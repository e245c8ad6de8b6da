"""Skill grades in SQLite: one row per (tenant, skill) with signal counts.

A skill nobody graded yet stands at `INITIAL_GRADE` (> 0, so a new skill is
offered to the model); grades move by the steps below and stay within
[`MIN_GRADE`, `MAX_GRADE`]. Grades are stored as integer thousandths so
nothing depends on float comparison.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

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
        column = _COLUMN[signal]
        return self._step(tenant, name, step, f"{column} = {column} + 1", now)

    def snapshot(self, tenant: str, name: str) -> dict[str, Any] | None:
        """The skill's grade row as plain data (for the skills journal); None: never graded."""
        row = self._db.execute(
            f"SELECT {', '.join(_ROW)} FROM skill_grades WHERE tenant=? AND name=?",
            (tenant, name),
        ).fetchone()
        return dict(zip(_ROW, row, strict=True)) if row is not None else None

    def restore(self, tenant: str, name: str, row: dict[str, Any] | None) -> None:
        """Put back a snapshot (None: no row, the skill starts at INITIAL_GRADE)."""
        values = [row.get(c) for c in _ROW] if row is not None else []
        if row is None or not all(isinstance(v, int | float) or v is None for v in values):
            self.reset(tenant, name)  # never graded (or a damaged entry): it starts fresh
            return
        self._db.execute(
            f"INSERT OR REPLACE INTO skill_grades (tenant, name, {', '.join(_ROW)})"
            f" VALUES (?, ?, {', '.join('?' * len(_ROW))})",
            (tenant, name, *values),
        )

    def reset(self, tenant: str, name: str) -> None:
        """Forget the skill's grade and counts: it starts fresh at INITIAL_GRADE."""
        self._db.execute("DELETE FROM skill_grades WHERE tenant=? AND name=?", (tenant, name))

    def revise(self, tenant: str, name: str, old: str, new: str, now: float) -> Applied:
        """A late grade (the outcome judge): move one signal from `old` to `new`."""
        step = OUTCOME_STEP[new] - OUTCOME_STEP[old]
        was, now_col = _COLUMN[old], _COLUMN[new]
        counts = f"{was} = MAX(0, {was} - 1), {now_col} = {now_col} + 1"
        return self._step(tenant, name, step, counts, now)

    def _step(self, tenant: str, name: str, step: int, counts: str, now: float) -> Applied:
        """Move the grade by `step` (within its bounds) and update `counts`, in one
        transaction; a skill never graded starts at INITIAL_GRADE."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(
                "INSERT OR IGNORE INTO skill_grades (tenant, name, grade) VALUES (?, ?, ?)",
                (tenant, name, INITIAL_GRADE),
            )
            db.execute(
                f"UPDATE skill_grades SET grade = MAX(?, MIN(?, grade + ?)), {counts},"
                " updated_at = ? WHERE tenant=? AND name=?",
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


_ROW = ("grade", "approvals", "rejections", "rephrases", "neutrals", "autos", "updated_at")
_COLUMN = {
    "approval": "approvals",
    "rejection": "rejections",
    "rephrase": "rephrases",
    "neutral": "neutrals",
    "auto": "autos",
}


class Applied(NamedTuple):
    """One signal applied to a grade, both in thousandths."""

    step: int
    grade: int


class LastTurn(NamedTuple):
    """A chat's last answered turn."""

    msg_id: str
    skills: list[str]  # the skills its reply used (graded by the next message)
    graded: bool  # already outcome-graded
    relevant: tuple[str, ...] = ()  # skills its request was about that the reply did not use


def _lines(text: str) -> list[str]:
    return [s for s in text.split("\n") if s]


class TurnLog:
    """The last answered turn per chat: its message id and the skills it used or was about."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._db = conn

    def last(self, tenant: str, channel: str, chat: str) -> LastTurn | None:
        """The chat's last answered turn, if any."""
        row = self._db.execute(
            "SELECT msg_id, skills, graded, relevant FROM turn_log"
            " WHERE tenant=? AND channel=? AND chat=?",
            (tenant, channel, chat),
        ).fetchone()
        if row is None:
            return None
        return LastTurn(row[0], _lines(row[1]), bool(row[2]), tuple(_lines(row[3])))

    def mark_graded(self, tenant: str, channel: str, chat: str, msg_id: str) -> None:
        self._db.execute(
            "UPDATE turn_log SET graded=1 WHERE tenant=? AND channel=? AND chat=? AND msg_id=?",
            (tenant, channel, chat, msg_id),
        )

    def record(
        self,
        tenant: str,
        channel: str,
        chat: str,
        msg_id: str,
        skills: list[str],
        now: float,
        relevant: Sequence[str] = (),
    ) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO turn_log"
            " (tenant, channel, chat, msg_id, skills, at, graded, relevant)"
            " VALUES (?, ?, ?, ?, ?, ?, 0, ?)",
            (tenant, channel, chat, msg_id, "\n".join(skills), now, "\n".join(relevant)),
        )
