"""The job store: reminders and recurring jobs in SQLite (table `jobs`).

A job belongs to one tenant and one chat. `kind` says what a run does
(reminder: post the payload; turn: run a full turn with the payload as prompt;
tool: run a saved tool, payload = tool name + options). `spec` is the
recurrence text ('' for a one-shot); the store never parses it, it asks the
injected `NextRun` callable (the time parser's `next_run`) when it must know
the following slots, to enforce the minimum interval. Ids are six characters
of an unambiguous base32 alphabet, unique per tenant.

Limits per tenant (`JobLimits`) are checked inside the creating transaction,
and `mark_run` never schedules a recurring job closer than the minimum
interval to its last run, whatever the parser returns.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, Final

from bridge.core.words import count
from bridge.schedule.schema import transaction
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
    """Jobs over one sqlite3 connection (autocommit mode, as `db.connect` opens it)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        next_run: NextRun,
        limits: JobLimits | None = None,
        new_id: Callable[[], str] = new_job_id,
    ) -> None:
        self.conn = conn
        self.next_run = next_run
        self.limits = limits or JobLimits()
        self._new_id = new_id

    def create(
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
        with transaction(self.conn):
            self._check_count(tenant)
            job_id = self._insert(
                (tenant, channel, chat, kind, spec, payload, tz, next_run_ms, created_ms)
            )
        job = self.get(tenant, job_id)
        assert job is not None
        return job

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

    def _check_count(self, tenant: str) -> None:
        (held,) = self.conn.execute(
            "SELECT COUNT(*) FROM jobs WHERE tenant = ? AND state != 'done'", (tenant,)
        ).fetchone()
        if held >= self.limits.max_jobs:
            raise LimitError(
                f"You have {count(held, 'job')}, the most allowed is {self.limits.max_jobs}: "
                "remove one first (/jobs lists them)."
            )

    def _insert(self, values: tuple[Any, ...]) -> str:
        tenant, rest = values[0], values[1:]
        for _ in range(8):
            job_id = self._new_id()
            cursor = self.conn.execute(
                "INSERT INTO jobs (tenant, id, channel, chat, kind, spec, payload, tz, state,"
                " next_run_ms, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'active', ?, ?)"
                " ON CONFLICT (tenant, id) DO NOTHING",
                (tenant, job_id, *rest),
            )
            if cursor.rowcount == 1:
                return job_id
        raise RuntimeError("no free job id after 8 tries")

    def get(self, tenant: str, job_id: str) -> Job | None:
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM jobs WHERE tenant = ? AND id = ?", (tenant, job_id)
        ).fetchone()
        return Job(*row) if row else None

    def list_jobs(
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
        return [Job(*row) for row in self.conn.execute(sql, args)]

    def remove(self, tenant: str, job_id: str) -> bool:
        with transaction(self.conn):
            cursor = self.conn.execute(
                "DELETE FROM jobs WHERE tenant = ? AND id = ?", (tenant, job_id)
            )
        return cursor.rowcount == 1

    def pause(self, tenant: str, job_id: str) -> bool:
        with transaction(self.conn):
            cursor = self.conn.execute(
                "UPDATE jobs SET state = 'paused' WHERE tenant = ? AND id = ? AND state = 'active'",
                (tenant, job_id),
            )
        return cursor.rowcount == 1

    def resume(self, tenant: str, job_id: str, now_ms: int) -> bool:
        """Reactivate a paused job. A recurring job's slots missed while paused are
        skipped (its next slot after now); a one-shot whose time passed runs at once."""
        with transaction(self.conn):
            job = self.get(tenant, job_id)
            if job is None or job.state != "paused":
                return False
            next_ms = job.next_run_ms
            if job.recurring and (next_ms is None or next_ms <= now_ms):
                next_ms = self.next_run(job.spec, job.tz, now_ms)
            state = "active" if next_ms is not None else "done"
            self.conn.execute(
                "UPDATE jobs SET state = ?, next_run_ms = ? WHERE tenant = ? AND id = ?",
                (state, next_ms, tenant, job_id),
            )
        return True

    def mark_run(
        self,
        tenant: str,
        job_id: str,
        *,
        ran_ms: int,
        next_run_ms: int | None,
        error: str | None = None,
        pause: bool = False,
    ) -> bool:
        """Record one run: its time, its error ('' clears the failure count), the next
        slot (None: the job is done). `pause` parks it (too many failures). Joins an
        open transaction, so the run's outbox entry can commit with it. False: the job
        was removed meanwhile (nothing recorded)."""
        with transaction(self.conn):
            job = self.get(tenant, job_id)
            if job is None:
                return False  # removed while it ran
            if next_run_ms is not None and job.recurring:
                next_run_ms = max(next_run_ms, ran_ms + self.limits.min_interval_ms)
            if next_run_ms is None:
                state = "done"
            elif pause or job.state == "paused":  # paused while it ran: stays paused
                state = "paused"
            else:
                state = "active"
            failures = 0 if error is None else job.fail_count + 1
            self.conn.execute(
                "UPDATE jobs SET state = ?, next_run_ms = ?, last_run_ms = ?, runs = runs + 1,"
                " fail_count = ?, last_error = ? WHERE tenant = ? AND id = ?",
                (state, next_run_ms, ran_ms, failures, (error or "")[:ERROR_CHARS], tenant, job_id),
            )
        return True

    def set_digest(self, tenant: str, job_id: str, digest: str) -> bool:
        """Remember the digest of the result a job last posted; joins an open transaction."""
        with transaction(self.conn):
            cursor = self.conn.execute(
                "UPDATE jobs SET last_digest = ? WHERE tenant = ? AND id = ?",
                (digest, tenant, job_id),
            )
        return cursor.rowcount == 1

    def due(self, now_ms: int, limit: int = 100) -> list[Job]:
        """Active jobs whose slot has come, earliest first (index `jobs_due`)."""
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM jobs WHERE state = 'active' AND next_run_ms <= ?"
            " ORDER BY next_run_ms LIMIT ?",
            (now_ms, limit),
        )
        return [Job(*row) for row in rows]

    def earliest_ms(self) -> int | None:
        """The next slot of any active job (None: nothing scheduled)."""
        (earliest,) = self.conn.execute(
            "SELECT MIN(next_run_ms) FROM jobs WHERE state = 'active'"
        ).fetchone()
        return int(earliest) if earliest is not None else None

    def prune_done(self, before_ms: int) -> int:
        """Delete finished jobs whose last run is older than `before_ms`."""
        with transaction(self.conn):
            cursor = self.conn.execute(
                "DELETE FROM jobs WHERE state = 'done' AND COALESCE(last_run_ms, created_ms) < ?",
                (before_ms,),
            )
        return cursor.rowcount


def _duration(ms: int) -> str:
    seconds = ms // 1000
    if seconds % 3600 == 0 and seconds >= 3600:
        return f"{seconds // 3600} h"
    if seconds % 60 == 0 and seconds >= 60:
        return f"{seconds // 60} min"
    return f"{seconds} s"
