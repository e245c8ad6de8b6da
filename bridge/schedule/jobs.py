"""The job store: reminders and recurring jobs (table `jobs`) on the `Database` protocol.

A job belongs to one tenant and one chat. `kind` says what a run does
(reminder: post the payload; turn: run a full turn with the payload as prompt;
tool: run a saved tool, payload = tool name + options). `spec` is the
recurrence text ('' for a one-shot); the store never parses it, it asks the
injected `NextRun` callable (the time parser's `next_run`) when it must know
the following slots, to enforce the minimum interval. Ids are six characters
of an unambiguous base32 alphabet, unique per tenant.

Limits per tenant (`JobLimits`): the count is checked by the creating
statement itself (`INSERT ... SELECT ... WHERE (SELECT count(*) ...) < max
RETURNING`), and `mark_run` never schedules a recurring job closer than the
minimum interval to its last run, whatever the parser returns. Every write is
ONE statement, never a transaction held across an await (the rule of
`bridge.schedule.outbox`: roost.db still has a second way in on SQLite):
`resume` writes only if the job is still paused, `mark_run` keeps a job
paused while it ran paused in the same UPDATE. A created or resumed job
notifies `WAKE_TOPIC`, so the scheduler of any process on the database wakes
(a `/remind` in `roost chat` beside a running daemon). On PostgreSQL (READ
COMMITTED) two creates of one tenant racing each other may both see room for
the last job: the limit can be passed by the number of racing creates.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, Final

from bridge.core.words import count
from bridge.schedule.outbox import WAKE_TOPIC
from bridge.storage.protocol import Database, Row
from bridge.types.masked import Masked, require

KINDS: Final = ("reminder", "turn", "tool")
ALPHABET: Final = "abcdefghijkmnpqrstuvwxyz23456789"  # 32 symbols: no l, o, 0, 1
ID_LENGTH: Final = 6
ERROR_CHARS: Final = 200

# (spec, tz name, after_ms) -> the first slot strictly after after_ms, or None when
# the recurrence has no further slot. The time parser's `next_run` fits this shape.
NextRun = Callable[[str, str, int], int | None]


class LimitError(ValueError):
    """A create refused by a per-tenant limit; `message` is fit to show the person."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class JobLimits:
    max_jobs: int = 50  # active + paused, per tenant
    min_interval_ms: int = 5 * 60_000  # between two runs of a recurring job
    max_payload_chars: int = 4000
    gaps_checked: int = 64  # following slots inspected for the minimum interval


@dataclass(frozen=True, slots=True)
class Job:
    tenant: str
    id: str
    channel: str
    chat: str
    kind: str
    spec: str
    payload: str
    tz: str
    state: str  # active | paused | done
    next_run_ms: int | None
    created_ms: int
    last_run_ms: int | None
    runs: int
    fail_count: int  # consecutive failed runs; 0 after a success
    last_error: str
    last_digest: str = ""  # hash of the last posted result ("post only on change")

    @property
    def recurring(self) -> bool:
        return self.spec != ""


_COLUMNS = ", ".join(f.name for f in fields(Job))


def new_job_id() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(ID_LENGTH))


def shortest_gap(spec: str, tz: str, first_ms: int, next_run: NextRun, count: int) -> int | None:
    """The smallest distance between the next `count` + 1 slots from `first_ms` on."""
    smallest: int | None = None
    current = first_ms
    for _ in range(count):
        following = next_run(spec, tz, current)
        if following is None:
            break
        gap = following - current
        smallest = gap if smallest is None else min(smallest, gap)
        current = following
    return smallest


class JobStore:
    """Jobs over a `Database` (injected by the composition root)."""

    def __init__(
        self,
        db: Database,
        next_run: NextRun,
        limits: JobLimits | None = None,
        new_id: Callable[[], str] = new_job_id,
    ) -> None:
        self.db = db
        self.next_run = next_run
        self.limits = limits or JobLimits()
        self._new_id = new_id

    async def create(
        self,
        *,
        tenant: str,
        channel: str,
        chat: str,
        kind: str,
        spec: str,
        payload: Masked,
        tz: str,
        next_run_ms: int,
        created_ms: int,
    ) -> Job:
        """Store a new active job; LimitError when a per-tenant limit refuses it.
        The payload (a reminder's text, a prompt) passed the tenant's masker (`Unmasked`)."""
        if kind not in KINDS:
            raise ValueError(f"unknown job kind {kind!r}")
        require(payload, "the job store")
        self._check_shape(spec, payload, tz, next_run_ms)
        values = (channel, chat, kind, spec, str(payload), tz, next_run_ms, created_ms)
        for _ in range(8):
            row = await self.db.fetch_one(
                _CREATE, (tenant, self._new_id(), *values, tenant, self.limits.max_jobs)
            )
            if row is not None:
                await self.db.notify(WAKE_TOPIC)  # the scheduler, in whatever process
                return Job(*row)
            await self._check_count(tenant)  # no row: the limit, or the id was taken
        raise RuntimeError("no free job id after 8 tries")

    def _check_shape(self, spec: str, payload: str, tz: str, next_run_ms: int) -> None:
        limits = self.limits
        if len(payload) > limits.max_payload_chars:
            raise LimitError(
                f"That is too long for a job: at most {limits.max_payload_chars} characters."
            )
        if not spec:
            return
        gap = shortest_gap(spec, tz, next_run_ms, self.next_run, limits.gaps_checked)
        if gap is not None and gap < limits.min_interval_ms:
            raise LimitError(
                f"That would run every {_duration(gap)}; "
                f"the shortest interval allowed is {_duration(limits.min_interval_ms)}."
            )

    async def _check_count(self, tenant: str) -> None:
        held = int(
            await self.db.fetch_value(
                "SELECT COUNT(*) FROM jobs WHERE tenant = ? AND state != 'done'", (tenant,)
            )
        )
        if held >= self.limits.max_jobs:
            raise LimitError(
                f"You have {count(held, 'job')}, the most allowed is {self.limits.max_jobs}: "
                "remove one first (/jobs lists them)."
            )

    async def get(self, tenant: str, job_id: str) -> Job | None:
        row = await self.db.fetch_one(
            f"SELECT {_COLUMNS} FROM jobs WHERE tenant = ? AND id = ?", (tenant, job_id)
        )
        return _job(row) if row else None

    async def list_jobs(
        self,
        tenant: str,
        channel: str | None = None,
        chat: str | None = None,
        *,
        done: bool = False,
    ) -> list[Job]:
        """A tenant's jobs (one chat's when channel and chat are given), soonest first."""
        sql = f"SELECT {_COLUMNS} FROM jobs WHERE tenant = ?"
        args: list[Any] = [tenant]
        if channel is not None and chat is not None:
            sql += " AND channel = ? AND chat = ?"
            args += [channel, chat]
        if not done:
            sql += " AND state != 'done'"
        sql += " ORDER BY next_run_ms IS NULL, next_run_ms, created_ms, id"
        return [_job(row) for row in await self.db.fetch_all(sql, args)]

    async def remove(self, tenant: str, job_id: str) -> bool:
        changed = await self.db.execute(
            "DELETE FROM jobs WHERE tenant = ? AND id = ?", (tenant, job_id)
        )
        return changed == 1

    async def pause(self, tenant: str, job_id: str) -> bool:
        changed = await self.db.execute(
            "UPDATE jobs SET state = 'paused' WHERE tenant = ? AND id = ? AND state = 'active'",
            (tenant, job_id),
        )
        return changed == 1

    async def resume(self, tenant: str, job_id: str, now_ms: int) -> bool:
        """Reactivate a paused job. A recurring job's slots missed while paused are
        skipped (its next slot after now); a one-shot whose time passed runs at once.
        Writes only if the job is still paused (one statement)."""
        job = await self.get(tenant, job_id)
        if job is None or job.state != "paused":
            return False
        next_ms = job.next_run_ms
        if job.recurring and (next_ms is None or next_ms <= now_ms):
            next_ms = self.next_run(job.spec, job.tz, now_ms)
        state = "active" if next_ms is not None else "done"
        changed = await self.db.execute(
            "UPDATE jobs SET state = ?, next_run_ms = ? WHERE tenant = ? AND id = ?"
            " AND state = 'paused'",
            (state, next_ms, tenant, job_id),
        )
        if changed == 1 and state == "active":
            await self.db.notify(WAKE_TOPIC)
        return changed == 1

    async def mark_run(
        self,
        tenant: str,
        job_id: str,
        *,
        ran_ms: int,
        next_run_ms: int | None,
        error: str | None = None,
        pause: bool = False,
        digest: str = "",
    ) -> bool:
        """Record one run in one statement: its time, its error (None clears the failure
        count), the next slot (None: the job is done), the digest of what it posted
        ('' keeps the last). `pause` parks it (too many failures); a job paused while it
        ran stays paused. False: the job was removed meanwhile (nothing recorded)."""
        job = await self.get(tenant, job_id)
        if job is None:
            return False  # removed while it ran
        if next_run_ms is not None and job.recurring:
            next_run_ms = max(next_run_ms, ran_ms + self.limits.min_interval_ms)
        state = "done" if next_run_ms is None else ("paused" if pause else "active")
        changed = await self.db.execute(
            _MARK_RUN,
            (
                int(state == "active"),
                state,
                next_run_ms,
                ran_ms,
                int(error is not None),
                (error or "")[:ERROR_CHARS],
                digest,
                digest,
                tenant,
                job_id,
            ),
        )
        return changed == 1

    async def set_digest(self, tenant: str, job_id: str, digest: str) -> bool:
        """Remember the digest of the result a job last posted."""
        changed = await self.db.execute(
            "UPDATE jobs SET last_digest = ? WHERE tenant = ? AND id = ?",
            (digest, tenant, job_id),
        )
        return changed == 1

    async def due(self, now_ms: int, limit: int = 100) -> list[Job]:
        """Active jobs whose slot has come, earliest first (index `jobs_due`)."""
        rows = await self.db.fetch_all(
            f"SELECT {_COLUMNS} FROM jobs WHERE state = 'active' AND next_run_ms <= ?"
            " ORDER BY next_run_ms LIMIT ?",
            (now_ms, limit),
        )
        return [_job(row) for row in rows]

    async def earliest_ms(self) -> int | None:
        """The next slot of any active job (None: nothing scheduled)."""
        earliest = await self.db.fetch_value(
            "SELECT MIN(next_run_ms) FROM jobs WHERE state = 'active'"
        )
        return int(earliest) if earliest is not None else None

    async def prune_done(self, before_ms: int) -> int:
        """Delete finished jobs whose last run is older than `before_ms`."""
        return await self.db.execute(
            "DELETE FROM jobs WHERE state = 'done' AND COALESCE(last_run_ms, created_ms) < ?",
            (before_ms,),
        )


# One statement: the tenant's count is checked where the row is written, and a taken id
# adds nothing (no row back: the caller tells the two apart).
_CREATE = (
    "INSERT INTO jobs (tenant, id, channel, chat, kind, spec, payload, tz, state,"
    " next_run_ms, created_ms)"
    " SELECT ?, ?, ?, ?, ?, ?, ?, ?, 'active', ?, ?"
    " WHERE (SELECT COUNT(*) FROM jobs WHERE tenant = ? AND state != 'done') < ?"
    f" ON CONFLICT (tenant, id) DO NOTHING RETURNING {_COLUMNS}"
)

# A job paused while it ran stays paused (the state is read where it is written).
_MARK_RUN = (
    "UPDATE jobs SET state = CASE WHEN state = 'paused' AND ? = 1 THEN 'paused'"
    " ELSE CAST(? AS TEXT) END, next_run_ms = ?, last_run_ms = ?, runs = runs + 1,"
    " fail_count = CASE WHEN ? = 1 THEN fail_count + 1 ELSE 0 END, last_error = ?,"
    " last_digest = CASE WHEN CAST(? AS TEXT) = '' THEN last_digest ELSE CAST(? AS TEXT) END"
    " WHERE tenant = ? AND id = ?"
)


def _job(row: Row) -> Job:
    return Job(*row)


def _duration(ms: int) -> str:
    seconds = ms // 1000
    if seconds % 3600 == 0 and seconds >= 3600:
        return f"{seconds // 3600} h"
    if seconds % 60 == 0 and seconds >= 60:
        return f"{seconds // 60} min"
    return f"{seconds} s"
