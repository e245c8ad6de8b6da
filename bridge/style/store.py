"""The learner's state (`style_bullets`, `style_sweeps`), on the `Database` protocol.

One row per bullet ever proposed, per tenant: its state, its text, the counts
it was proposed on, its A/B and live counters, its score and, once it has
ended, why (`outcome`) and until when its skill is cooled down. Times are
integer milliseconds. States: pending (awaiting the judge), shadow, live,
rejected (overfit, failed A/B, withdrawn), rolled_back (live rollback or cap
eviction).

Every write is ONE statement. A sweep's state change (`transaction()`: its
writes, then its audit events, committed together) and a dry run
(`discarded()`: everything rolled back) keep a transaction across awaits:
only `roost style sweep` runs them, in its own process (the judge is asked
outside every change); the daemon's writes wait for the transaction's commit
meanwhile.

The prompt reads a tenant's live and shadow bullets synchronously (block 8,
`bridge.style.view.LearnedStyle`), so the store mirrors them per tenant
(`TenantRows`, `bridge.loadout.db_changes`); a write of a bullet that is or
becomes shown drops the tenant's entry (read again at its next use; a dry
run's write is rolled back, so the entry is never edited in place) and
notifies the prompt rows' topic, which reaches other processes' mirrors.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, fields
from typing import Any, Final

from bridge.loadout.db_changes import TableChanges, TenantRows
from bridge.storage.protocol import Database
from bridge.style.rules import Counts, bullet_id

STATES = ("pending", "shadow", "live", "rejected", "rolled_back")
ACTIVE = ("pending", "shadow", "live")
SHOWN = ("live", "shadow")  # what the prompt reads (block 8)
TABLE: Final = "style_bullets"


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


class _Discarded(Exception):
    """Raised at the end of a dry run's transaction: everything in it is rolled back."""


class StyleStore:
    """The learner's bullets and sweeps on the `Database` (see the module)."""

    def __init__(self, db: Database, changes: TableChanges | None = None) -> None:
        """`changes`: the process's prompt rows (shared with the prompt); None: a mirror
        of this store's own."""
        self._db = db
        self.changes = changes if changes is not None else TableChanges(db)
        self._shown: TenantRows[tuple[Bullet, ...]] = self.changes.mirror(TABLE, self._load)

    async def _rows(self, where: str, args: Sequence[Any]) -> list[Bullet]:
        rows = await self._db.fetch_all(f"SELECT {_COLUMNS} FROM style_bullets {where}", args)
        return [_bullet(row) for row in rows]

    async def _load(self, tenant: str) -> tuple[Bullet, ...]:
        return tuple(await self.tenant(tenant, SHOWN))

    def cached(self, tenant: str) -> tuple[Bullet, ...] | None:
        """The tenant's live and shadow bullets as mirrored (synchronous: the prompt, after
        `TableChanges.prepare`); None when not read yet."""
        return self._shown.peek(tenant)

    async def shown(self, tenant: str) -> tuple[Bullet, ...]:
        """The tenant's live and shadow bullets (the mirror's when current)."""
        return await self._shown.get(tenant)

    async def get(self, row_id: int) -> Bullet | None:
        rows = await self._rows("WHERE id = ?", (row_id,))
        return rows[0] if rows else None

    async def tenant(self, tenant: str, states: Sequence[str] = STATES) -> list[Bullet]:
        marks = ",".join("?" * len(states))
        return await self._rows(
            f"WHERE tenant = ? AND state IN ({marks}) ORDER BY id", (tenant, *states)
        )

    async def all(self, states: Sequence[str] = STATES) -> list[Bullet]:
        marks = ",".join("?" * len(states))
        return await self._rows(f"WHERE state IN ({marks}) ORDER BY tenant, id", tuple(states))

    async def tenants(self) -> list[str]:
        rows = await self._db.fetch_all("SELECT DISTINCT tenant FROM style_bullets ORDER BY tenant")
        return [str(r[0]) for r in rows]

    async def cooldown_until(self, tenant: str, skill: str) -> int:
        until = await self._db.fetch_value(
            "SELECT COALESCE(MAX(cooldown_until_ms), 0) FROM style_bullets"
            " WHERE tenant = ? AND skill = ?",
            (tenant, skill),
        )
        return int(until or 0)

    async def add_candidate(
        self, tenant: str, skill: str, text: str, c: Counts, now_ms: int
    ) -> Bullet:
        row = await self._db.fetch_one(
            "INSERT INTO style_bullets (tenant, skill, state, text, signal_count,"
            " negative_count, created_ms, updated_ms) VALUES (?, ?, 'pending', ?, ?, ?, ?, ?)"
            f" RETURNING {_COLUMNS}",
            (tenant, skill, text, c.total, c.negative, now_ms, now_ms),
        )
        assert row is not None  # an INSERT ... RETURNING returns its row
        return _bullet(row)  # pending: not shown, the mirror is unchanged

    async def update(self, row_id: int, now_ms: int, **values: object) -> None:
        """Set columns of one bullet (ONE statement). A write that may change what the
        prompt shows (a new state, or any column of a shown bullet) drops the tenant's
        mirror entry and notifies the prompt rows' topic."""
        allowed = {f.name for f in fields(Bullet)} - {"id", "tenant", "skill", "created_ms"}
        unknown = set(values) - allowed
        if unknown:
            raise ValueError(f"unknown columns: {sorted(unknown)}")
        cols = [*values, "updated_ms"]
        sets = ", ".join(f"{c} = ?" for c in cols)
        row = await self._db.fetch_one(
            f"UPDATE style_bullets SET {sets} WHERE id = ? RETURNING tenant, state",
            (*values.values(), now_ms, row_id),
        )
        if row is None:
            return
        if "state" in values or str(row[1]) in SHOWN:  # the state before is not known here
            self._shown.wrote(str(row[0]))  # read again at its next use
            await self.changes.notify()

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """The writes inside commit together (a sweep's state change with its audit
        events; only `roost style sweep` runs one, see the module)."""
        async with self._db.transaction():
            yield

    @contextlib.asynccontextmanager
    async def discarded(self) -> AsyncIterator[None]:
        """Everything written inside is rolled back (a dry run)."""
        with contextlib.suppress(_Discarded):
            async with self._db.transaction():
                yield
                raise _Discarded

    async def record_sweep(self, row: SweepRow) -> None:
        names = [f.name for f in fields(SweepRow)]
        await self._db.execute(
            f"INSERT INTO style_sweeps ({', '.join(names)}) VALUES ({','.join('?' * len(names))})",
            tuple(getattr(row, n) for n in names),
        )

    async def last_sweep(self) -> SweepRow | None:
        names = ", ".join(f.name for f in fields(SweepRow))
        row = await self._db.fetch_one(
            f"SELECT {names} FROM style_sweeps ORDER BY at_ms DESC LIMIT 1"
        )
        return SweepRow(*row) if row else None


def _bullet(row: Sequence[Any]) -> Bullet:
    return Bullet(*row)
