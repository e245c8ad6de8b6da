"""The judge's daily counts per tenant in SQLite (table `grade_judge_usage`).

Per tenant and UTC day: `asked` (follow-ups sent to the judge, what the
daily cap counts), `ignored` (answers that were not one known label) and
`capped` (follow-ups not asked because the cap was reached). Each count is
one UPSERT, so two processes counting at once add up.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Literal

Column = Literal["asked", "ignored", "capped"]


@dataclass(frozen=True, slots=True)
class JudgeDay:
    asked: int = 0
    ignored: int = 0
    capped: int = 0


class JudgeUsage:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def day(self, tenant: str, day: str) -> JudgeDay:
        row = self._db.execute(
            "SELECT asked, ignored, capped FROM grade_judge_usage WHERE tenant=? AND day=?",
            (tenant, day),
        ).fetchone()
        return JudgeDay(*row) if row else JudgeDay()

    def add(self, tenant: str, day: str, column: Column, n: int) -> None:
        if n <= 0:
            return
        if column not in ("asked", "ignored", "capped"):
            raise ValueError(column)
        self._db.execute(
            f"INSERT INTO grade_judge_usage (tenant, day, {column}) VALUES (?, ?, ?) "
            f"ON CONFLICT (tenant, day) DO UPDATE SET {column} = {column} + excluded.{column}",
            (tenant, day, n),
        )
