"""The learner's state in SQLite (`style_bullets`, `style_sweeps` in roost.db).

One row per bullet ever proposed, per tenant: its state, its text, the counts
it was proposed on, its A/B and live counters, its score and, once it has
ended, why (`outcome`) and until when its skill is cooled down. Times are
integer milliseconds. States: pending (awaiting the judge), shadow, live,
rejected (overfit, failed A/B, withdrawn), rolled_back (live rollback or cap
eviction).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any

from bridge.style.rules import Counts, bullet_id

STATES = ("pending", "shadow", "live", "rejected", "rolled_back")
ACTIVE = ("pending", "shadow", "live")


@dataclass(frozen=True, slots=True)
class Bullet:
    id: int
    tenant: str
    skill: str
    state: str
    text: str
    outcome: str
    signal_count: int
    negative_count: int
    judge_attempts: int
    created_ms: int
    updated_ms: int
    shadow_since_ms: int | None
    live_since_ms: int | None
    cooldown_until_ms: int
    with_n: int
    with_neg: int
    without_n: int
    without_neg: int
    live_n: int
    live_neg: int
    score: int

    @property
    def bid(self) -> str:
        return bullet_id(self.id)

    @property
    def with_counts(self) -> Counts:
        return Counts(self.with_n, self.with_neg)

    @property
    def without_counts(self) -> Counts:
        return Counts(self.without_n, self.without_neg)

    @property
    def live_counts(self) -> Counts:
        return Counts(self.live_n, self.live_neg)


_COLUMNS = ", ".join(f.name for f in fields(Bullet))


@dataclass(frozen=True, slots=True)
class SweepRow:
    at_ms: int
    tenants: int
    candidates: int
    judged: int
    pending: int
    promoted: int
    rejected: int
    rolled_back: int
    judge_status: str


class StyleStore:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def _rows(self, where: str, args: Sequence[Any]) -> list[Bullet]:
        cur = self._db.execute(f"SELECT {_COLUMNS} FROM style_bullets {where}", tuple(args))
        return [Bullet(*row) for row in cur.fetchall()]

    def get(self, row_id: int) -> Bullet | None:
        rows = self._rows("WHERE id=?", (row_id,))
        return rows[0] if rows else None

    def tenant(self, tenant: str, states: Sequence[str] = STATES) -> list[Bullet]:
        marks = ",".join("?" * len(states))
        return self._rows(f"WHERE tenant=? AND state IN ({marks}) ORDER BY id", (tenant, *states))

    def all(self, states: Sequence[str] = STATES) -> list[Bullet]:
        marks = ",".join("?" * len(states))
        return self._rows(f"WHERE state IN ({marks}) ORDER BY tenant, id", tuple(states))

    def tenants(self) -> list[str]:
        cur = self._db.execute("SELECT DISTINCT tenant FROM style_bullets ORDER BY tenant")
        return [r[0] for r in cur.fetchall()]

    def cooldown_until(self, tenant: str, skill: str) -> int:
        (until,) = self._db.execute(
            "SELECT COALESCE(MAX(cooldown_until_ms), 0) FROM style_bullets"
            " WHERE tenant=? AND skill=?",
            (tenant, skill),
        ).fetchone()
        return int(until)

    def add_candidate(self, tenant: str, skill: str, text: str, c: Counts, now_ms: int) -> Bullet:
        cur = self._db.execute(
            "INSERT INTO style_bullets (tenant, skill, state, text, signal_count,"
            " negative_count, created_ms, updated_ms) VALUES (?, ?, 'pending', ?, ?, ?, ?, ?)",
            (tenant, skill, text, c.total, c.negative, now_ms, now_ms),
        )
        row = self.get(int(cur.lastrowid or 0))
        assert row is not None
        return row

    def update(self, row_id: int, now_ms: int, **values: object) -> None:
        allowed = {f.name for f in fields(Bullet)} - {"id", "tenant", "skill", "created_ms"}
        unknown = set(values) - allowed
        if unknown:
            raise ValueError(f"unknown columns: {sorted(unknown)}")
        cols = [*values, "updated_ms"]
        sets = ", ".join(f"{c}=?" for c in cols)
        self._db.execute(
            f"UPDATE style_bullets SET {sets} WHERE id=?", (*values.values(), now_ms, row_id)
        )

    def transaction(self) -> _Tx:
        return _Tx(self._db)

    @contextlib.contextmanager
    def discarded(self) -> Iterator[None]:
        """Everything written inside is rolled back (a dry run)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            self._db.execute("ROLLBACK")

    def record_sweep(self, row: SweepRow) -> None:
        names = [f.name for f in fields(SweepRow)]
        self._db.execute(
            f"INSERT INTO style_sweeps ({', '.join(names)}) VALUES ({','.join('?' * len(names))})",
            tuple(getattr(row, n) for n in names),
        )

    def last_sweep(self) -> SweepRow | None:
        names = ", ".join(f.name for f in fields(SweepRow))
        row = self._db.execute(
            f"SELECT {names} FROM style_sweeps ORDER BY at_ms DESC LIMIT 1"
        ).fetchone()
        return SweepRow(*row) if row else None


class _Tx:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error) on an autocommit connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self._db.execute("ROLLBACK" if exc_type else "COMMIT")
