"""Skill grades: one row per (tenant, skill) with signal counts; the turn log.

A skill nobody graded yet stands at `INITIAL_GRADE` (> 0, so a new skill is
offered to the model); grades move by the steps below and stay within
[`MIN_GRADE`, `MAX_GRADE`]. Grades are stored as integer thousandths so
nothing depends on float comparison.

Both stores run on the `Database` protocol (`bridge.storage`), every write ONE
statement (a grade's step is one upsert that clamps and counts, RETURNING the
row). The prompt reads a tenant's grades synchronously, so `SkillGrades`
keeps them in a `TenantRows` mirror (`bridge.loadout.db_changes`): kept by
its own writes before their await returns, read again when another process
notified a write of a prompt table (each grade write notifies; the grades one
turn writes, once after them all: `apply_all`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from bridge.loadout.db_changes import TableChanges, TenantRows
from bridge.storage.protocol import Database
from bridge.storage.units import Unit, drive, execute

INITIAL_GRADE = 1000  # thousandths
MIN_GRADE, MAX_GRADE = -3000, 3000
AUTO_STEP = 300  # a reply used the skill
OUTCOME_STEP = {"approval": 200, "rejection": -500, "rephrase": -300, "neutral": 0}
SIGNALS = ("approval", "rejection", "rephrase", "neutral", "auto")
TABLE: Final = "skill_grades"


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
    """One tenant's grades: read from the mirror (`TenantRows`, one SELECT when missing or
    stale), written one statement at a time (see the module)."""

    def __init__(self, db: Database, changes: TableChanges | None = None) -> None:
        """`changes`: the process's prompt rows (shared with the prompt); None: a mirror
        of this store's own."""
        self._db = db
        self.changes = changes if changes is not None else TableChanges(db)
        self._rows: TenantRows[dict[str, Grade]] = self.changes.mirror(TABLE, self._load)

    async def _load(self, tenant: str) -> dict[str, Grade]:
        rows = await self._db.fetch_all(
            f"SELECT name, {', '.join(_ROW)} FROM skill_grades WHERE tenant = ?", (tenant,)
        )
        return {str(r[0]): _grade(str(r[0]), r[1:]) for r in rows}

    async def all(self, tenant: str) -> dict[str, Grade]:
        return dict(await self._rows.get(tenant))

    def cached(self, tenant: str) -> dict[str, Grade] | None:
        """The tenant's grades as mirrored (synchronous: the prompt, after `prepare`);
        None when they were not read yet."""
        return self._rows.peek(tenant)

    async def get(self, tenant: str, name: str) -> Grade:
        return (await self._rows.get(tenant)).get(name) or Grade(
            name, INITIAL_GRADE, dict.fromkeys(SIGNALS, 0), None
        )

    async def apply(self, tenant: str, name: str, signal: str, now: float) -> Applied:
        """Record one signal; returns the step and the grade after it."""
        return await self._apply(tenant, name, signal, now, notify=True)

    async def apply_all(
        self,
        tenant: str,
        names: Sequence[str],
        signal: str,
        now: float,
        each: Callable[[str, Applied], None] = lambda _name, _applied: None,
    ) -> None:
        """Record one signal for each skill of `names` (`each` told of every one written, in
        turn), then notify once, also when a write failed: one commit for the readers of
        other processes, not one per skill."""
        try:
            for name in names:
                each(name, await self._apply(tenant, name, signal, now, notify=False))
        finally:
            if names:
                await self.changes.notify()

    async def _apply(
        self, tenant: str, name: str, signal: str, now: float, *, notify: bool
    ) -> Applied:
        step = AUTO_STEP if signal == "auto" else OUTCOME_STEP[signal]
        return await self._step(tenant, name, step, None, _COLUMN[signal], now, notify)

    async def snapshot(self, tenant: str, name: str) -> dict[str, Any] | None:
        """The skill's grade row as plain data (for the skills journal); None: never graded."""
        row = await self._db.fetch_one(
            f"SELECT {', '.join(_ROW)} FROM skill_grades WHERE tenant = ? AND name = ?",
            (tenant, name),
        )
        return dict(zip(_ROW, row, strict=True)) if row is not None else None

    async def restore(self, tenant: str, name: str, row: dict[str, Any] | None) -> None:
        """Put back a snapshot (None: no row, the skill starts at INITIAL_GRADE)."""
        values = [row.get(c) for c in _ROW] if row is not None else []
        if row is None or not all(
            (isinstance(v, int | float) and not isinstance(v, bool)) or v is None for v in values
        ):
            await self.reset(tenant, name)  # never graded (or a damaged entry): starts fresh
            return
        ints = [int(v) if v is not None else 0 for v in values[:-1]]
        at = None if values[-1] is None else float(values[-1])
        sets = ", ".join(f"{c} = excluded.{c}" for c in _ROW)
        await self._db.execute(
            f"INSERT INTO skill_grades (tenant, name, {', '.join(_ROW)})"
            f" VALUES (?, ?, {', '.join('?' * len(_ROW))})"
            f" ON CONFLICT (tenant, name) DO UPDATE SET {sets}",
            (tenant, name, *ints, at),
        )
        grade = _grade(name, (*ints, at))
        self._rows.wrote(tenant, lambda grades: {**grades, name: grade})
        await self.changes.notify()

    async def reset(self, tenant: str, name: str) -> None:
        """Forget the skill's grade and counts: it starts fresh at INITIAL_GRADE."""
        await self._db.execute(
            "DELETE FROM skill_grades WHERE tenant = ? AND name = ?", (tenant, name)
        )
        self._rows.wrote(tenant, lambda grades: {k: v for k, v in grades.items() if k != name})
        await self.changes.notify()

    async def revise(self, tenant: str, name: str, old: str, new: str, now: float) -> Applied:
        """A late grade (the outcome judge): move one signal from `old` to `new`."""
        step = OUTCOME_STEP[new] - OUTCOME_STEP[old]
        return await self._step(tenant, name, step, _COLUMN[old], _COLUMN[new], now)

    async def _step(
        self,
        tenant: str,
        name: str,
        step: int,
        less: str | None,
        more: str,
        now: float,
        notify: bool = True,
    ) -> Applied:
        """Move the grade by `step` (within its bounds), one count from `less` (not below
        0) to `more`, in ONE upsert; a skill never graded starts at INITIAL_GRADE."""
        first = {c: 0 for c in _ROW[1:-1]}
        first[more] = 1
        counts = f"{more} = skill_grades.{more} + 1"
        if less is not None and less != more:
            counts += (
                f", {less} = CASE WHEN skill_grades.{less} > 0"
                f" THEN skill_grades.{less} - 1 ELSE 0 END"
            )
        row = await self._db.fetch_one(
            f"INSERT INTO skill_grades (tenant, name, {', '.join(_ROW)})"
            f" VALUES (:tenant, :name, {_clamp(str(INITIAL_GRADE + step))},"
            f" {', '.join(str(n) for n in first.values())}, :now)"
            " ON CONFLICT (tenant, name) DO UPDATE SET"
            f" grade = {_clamp('skill_grades.grade + CAST(:step AS INTEGER)')},"
            f" {counts}, updated_at = excluded.updated_at"
            f" RETURNING {', '.join(_ROW)}",
            {"tenant": tenant, "name": name, "step": step, "now": now},
        )
        assert row is not None  # an upsert returns its row
        grade = _grade(name, row)
        self._rows.wrote(tenant, lambda grades: {**grades, name: grade})
        if notify:
            await self.changes.notify()
        return Applied(step, grade.grade)


def _clamp(expr: str) -> str:
    """`expr` kept within [MIN_GRADE, MAX_GRADE] (the same SQL on both backends)."""
    return (
        f"CASE WHEN {expr} < {MIN_GRADE} THEN {MIN_GRADE}"
        f" WHEN {expr} > {MAX_GRADE} THEN {MAX_GRADE} ELSE {expr} END"
    )


def _grade(name: str, row: Sequence[Any]) -> Grade:
    """A `Grade` from the `_ROW` columns."""
    counts = dict(zip(SIGNALS, (int(n) for n in row[1:6]), strict=True))
    return Grade(name, int(row[0]), counts, None if row[6] is None else float(row[6]))


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
    """The last answered turn per chat: its message id and the skills it used or was about.

    A turn reads its chat's row before the model (`last`, a read) and writes in its end unit
    the upsert of its own row (`turn_recorded`); the graded mark of the row it graded
    (`turn_graded`) only when that upsert is missing (skills/observer.py). A turn that ends
    without that unit (failed, stopped, cancelled, unstored) writes the mark alone
    (`mark_graded`), so a message sent again never grades the same turn twice. `record`
    and `mark_graded` run the same units alone."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def last(self, tenant: str, channel: str, chat: str) -> LastTurn | None:
        """The chat's last answered turn, if any."""
        row = await self._db.fetch_one(
            "SELECT msg_id, skills, graded, relevant FROM turn_log"
            " WHERE tenant = ? AND channel = ? AND chat = ?",
            (tenant, channel, chat),
        )
        if row is None:
            return None
        return LastTurn(str(row[0]), _lines(row[1]), bool(row[2]), tuple(_lines(row[3])))

    async def mark_graded(self, tenant: str, channel: str, chat: str, msg_id: str) -> None:
        await drive(self._db, turn_graded(tenant, channel, chat, msg_id))

    async def record(
        self,
        tenant: str,
        channel: str,
        chat: str,
        msg_id: str,
        skills: Sequence[str],
        now: float,
        relevant: Sequence[str] = (),
    ) -> None:
        await drive(self._db, turn_recorded(tenant, channel, chat, msg_id, skills, now, relevant))


def turn_recorded(
    tenant: str,
    channel: str,
    chat: str,
    msg_id: str,
    skills: Sequence[str],
    now: float,
    relevant: Sequence[str] = (),
) -> Unit[int]:
    """`TurnLog.record` as a unit of one statement, for a turn's end (`EndWrite`)."""
    args = (tenant, channel, chat, msg_id, "\n".join(skills), now, "\n".join(relevant))
    changed: int = yield execute(_RECORD, args)
    return changed


def turn_graded(tenant: str, channel: str, chat: str, msg_id: str) -> Unit[int]:
    """`TurnLog.mark_graded` as a unit of one statement, for a turn's end (`EndWrite`): the
    turn `msg_id` is outcome-graded (no row changes once a later turn replaced it)."""
    changed: int = yield execute(_GRADED, (tenant, channel, chat, msg_id))
    return changed


_GRADED = (
    "UPDATE turn_log SET graded = 1 WHERE tenant = ? AND channel = ? AND chat = ? AND msg_id = ?"
)

_RECORD = (
    "INSERT INTO turn_log (tenant, channel, chat, msg_id, skills, at, graded, relevant)"
    " VALUES (?, ?, ?, ?, ?, ?, 0, ?) ON CONFLICT (tenant, channel, chat) DO UPDATE SET"
    " msg_id = excluded.msg_id, skills = excluded.skills, at = excluded.at,"
    " graded = 0, relevant = excluded.relevant"
)
