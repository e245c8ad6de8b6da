"""The judge's daily counts per tenant (table `grade_judge_usage`, on the `Database`).

Per tenant and UTC day: `asked` (follow-ups sent to the judge, what the
daily cap counts), `ignored` (answers that were not one known label) and
`capped` (follow-ups not asked because the cap was reached). Each count is
one UPSERT, so two processes counting at once add up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bridge.storage.protocol import Database

Column = Literal["asked", "ignored", "capped"]


@dataclass(frozen=True, slots=True)
class JudgeDay:
    asked: int = 0
    ignored: int = 0
    capped: int = 0


class JudgeUsage:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def day(self, tenant: str, day: str) -> JudgeDay:
        row = await self._db.fetch_one(
            "SELECT asked, ignored, capped FROM grade_judge_usage WHERE tenant = ? AND day = ?",
            (tenant, day),
        )
        return JudgeDay(*(int(n) for n in row)) if row else JudgeDay()

    async def add(self, tenant: str, day: str, column: Column, n: int) -> None:
        if n <= 0:
            return
        if column not in ("asked", "ignored", "capped"):
            raise ValueError(column)
        await self._db.execute(
            f"INSERT INTO grade_judge_usage (tenant, day, {column}) VALUES (?, ?, ?) "
            f"ON CONFLICT (tenant, day) DO UPDATE SET"
            f" {column} = grade_judge_usage.{column} + excluded.{column}",
            (tenant, day, n),
        )
