"""The delivery outbox in SQLite (table `outbox`): store first, then deliver.

Every proactive message (a reminder, a job's answer) and every reply that
failed after its retries is enqueued under an idempotency key, as text that
passed the tenant's masker (`Masked`: `enqueue` refuses anything else, so a
vault value never sits in a row, nor comes back from `GET /api/outbox`); the key is
UNIQUE per chat, so enqueueing it again (a job re-run after a crash, a retry
of the same reply) adds nothing and the message goes out at most once.

Delivery is a separate step: `claim` hands out due entries, one per chat at a
time and oldest first (a chat's messages keep their order), and leases them
(`due_ms` moves `lease_ms` ahead); `delivered` or `failed` ends the claim.
A claim that is never ended (the process died) is claimed again when its
lease runs out, or at once when the next daemon starts (`release_leases`:
one daemon per home holds the instance lock, so every lease it finds was
held by a process that is gone). Every transition is one transaction.
A message delivered in several parts records each part as it arrives
(`parts`, `bridge.schedule.outbox_parts`): a retry resumes at the first part
that did not arrive and never sends one twice.

The window that remains: a crash after the platform accepted the message and
before `delivered` committed sends it again after the lease. Platforms that
take an idempotency key or let the client de-duplicate (the web page gets the
entry's key) close it; Telegram's Bot API has no such key, so there the
guarantee is at least once for that window and exactly once otherwise.

Retries back off (`backoff_ms`: base·2^(n-1), capped); an entry becomes dead
(dead letter, kept for `failures`) after `max_attempts` claims, past
`max_age_ms`, or on a permanent error. Delivered and dead entries are pruned
after their retention.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, fields, replace
from typing import Any, Final

from bridge.schedule.outbox_parts import OutboxParts
from bridge.schedule.schema import transaction
from bridge.types.masked import Masked, require

ERROR_CHARS: Final = 200


class DeliveryError(Exception):
    """Raised by a deliver callback: `kind` is recorded, `permanent` dead-letters
    at once (chat gone, bot blocked), `retry_after_ms` is a floor for the wait."""

    def __init__(self, kind: str, *, permanent: bool = False, retry_after_ms: int = 0) -> None:
        super().__init__(kind)
        self.kind = kind
        self.permanent = permanent
        self.retry_after_ms = retry_after_ms


@dataclass(frozen=True, slots=True)
class OutboxPolicy:
    lease_ms: int = 120_000  # a claim not ended by then is claimable again
    base_ms: int = 5_000  # first retry after 5 s, then 10 s, 20 s ...
    cap_ms: int = 3_600_000  # ... up to one hour
    max_attempts: int = 20  # claims before the entry is dead (about 11 h of retries)
    max_age_ms: int = 2 * 86_400_000  # or older than this when it fails
    keep_delivered_ms: int = 7 * 86_400_000  # the key stays known this long
    keep_dead_ms: int = 30 * 86_400_000


@dataclass(frozen=True, slots=True)
class OutboxEntry:
    id: int
    tenant: str
    channel: str
    chat: str
    key: str
    text: str
    state: str  # queued | delivered | dead
    created_ms: int
    due_ms: int
    attempts: int
    last_error: str
    done_ms: int | None


@dataclass(frozen=True, slots=True)
class Enqueued:
    id: int
    new: bool  # False: the key was already there, nothing was added


_COLUMNS = ", ".join(f.name for f in fields(OutboxEntry))


def backoff_ms(attempts: int, base_ms: int, cap_ms: int) -> int:
    """Wait after the `attempts`-th failed attempt: base·2^(attempts-1), at most cap."""
    if attempts <= 0:
        return 0
    return min(cap_ms, base_ms << min(attempts - 1, 40))


class OutboxStore:
    """The outbox over one sqlite3 connection (autocommit mode, as `db.connect` opens it)."""

    def __init__(self, conn: sqlite3.Connection, policy: OutboxPolicy | None = None) -> None:
        self.conn = conn
        self.policy = policy or OutboxPolicy()
        self.parts = OutboxParts(conn)  # what of a multi-part entry has arrived

    def enqueue(
        self, tenant: str, channel: str, chat: str, text: Masked, key: str, *, now_ms: int
    ) -> Enqueued:
        """Store a message due now; a key already known for this chat adds nothing.
        Joins an open transaction (a job's `mark_run`). Only masked text (`Unmasked`)."""
        if not key:
            raise ValueError("an outbox entry needs an idempotency key")
        require(text, "the outbox")
        with transaction(self.conn):
            row = self.conn.execute(
                "INSERT INTO outbox (tenant, channel, chat, key, text, state, created_ms, due_ms)"
                " VALUES (?, ?, ?, ?, ?, 'queued', ?, ?)"
                " ON CONFLICT (tenant, channel, chat, key) DO NOTHING RETURNING id",
                (tenant, channel, chat, key, text, now_ms, now_ms),
            ).fetchone()
            if row is not None:
                return Enqueued(int(row[0]), True)
            (existing,) = self.conn.execute(
                "SELECT id FROM outbox WHERE tenant = ? AND channel = ? AND chat = ? AND key = ?",
                (tenant, channel, chat, key),
            ).fetchone()
        return Enqueued(int(existing), False)

    def claim(self, now_ms: int, limit: int = 50) -> list[OutboxEntry]:
        """Lease up to `limit` due entries, the oldest queued one of each chat only.
        Entries past their attempts or age are dead-lettered instead of handed out."""
        policy = self.policy
        with transaction(self.conn):
            self.conn.execute(
                "UPDATE outbox SET state = 'dead', done_ms = ?,"
                " last_error = CASE WHEN last_error = '' THEN 'expired' ELSE last_error END"
                " WHERE state = 'queued' AND due_ms <= ?"
                " AND (attempts >= ? OR (attempts > 0 AND created_ms <= ?))",
                (now_ms, now_ms, policy.max_attempts, now_ms - policy.max_age_ms),
            )
            entries = [
                OutboxEntry(*row)
                for row in self.conn.execute(
                    f"SELECT {_COLUMNS} FROM outbox AS o WHERE state = 'queued' AND due_ms <= ?"
                    " AND NOT EXISTS (SELECT 1 FROM outbox AS e WHERE e.state = 'queued'"
                    " AND e.tenant = o.tenant AND e.channel = o.channel AND e.chat = o.chat"
                    " AND e.id < o.id) ORDER BY due_ms, id LIMIT ?",
                    (now_ms, limit),
                )
            ]
            lease = now_ms + policy.lease_ms
            self.conn.executemany(
                "UPDATE outbox SET due_ms = ?, attempts = attempts + 1, leased = 1 WHERE id = ?",
                [(lease, entry.id) for entry in entries],
            )
        return [replace(entry, due_ms=lease, attempts=entry.attempts + 1) for entry in entries]

    def delivered(self, entry_id: int, now_ms: int) -> bool:
        with transaction(self.conn):
            cursor = self.conn.execute(
                "UPDATE outbox SET state = 'delivered', done_ms = ?, last_error = '', leased = 0"
                " WHERE id = ? AND state = 'queued'",
                (now_ms, entry_id),
            )
        return cursor.rowcount == 1

    def failed(
        self,
        entry_id: int,
        error_kind: str,
        now_ms: int,
        *,
        permanent: bool = False,
        retry_after_ms: int = 0,
    ) -> str | None:
        """Record a failed attempt: back off (at least `retry_after_ms`), or dead-letter.
        Returns the new state ('queued' or 'dead'), None when it is no longer queued."""
        policy = self.policy
        with transaction(self.conn):
            row = self.conn.execute(
                "SELECT attempts, created_ms FROM outbox WHERE id = ? AND state = 'queued'",
                (entry_id,),
            ).fetchone()
            if row is None:
                return None
            attempts, created_ms = int(row[0]), int(row[1])
            wait = max(backoff_ms(attempts, policy.base_ms, policy.cap_ms), retry_after_ms)
            dead = (
                permanent
                or attempts >= policy.max_attempts
                or now_ms + wait - created_ms > policy.max_age_ms
            )
            self.conn.execute(
                "UPDATE outbox SET state = ?, due_ms = ?, done_ms = ?, last_error = ?, leased = 0"
                " WHERE id = ?",
                (
                    "dead" if dead else "queued",
                    now_ms + wait,
                    now_ms if dead else None,
                    error_kind[:ERROR_CHARS],
                    entry_id,
                ),
            )
        return "dead" if dead else "queued"

    def release_leases(self, now_ms: int) -> int:
        """Make every leased entry due now (at start-up: their holder is gone)."""
        with transaction(self.conn):
            cursor = self.conn.execute(
                "UPDATE outbox SET due_ms = ?, leased = 0 WHERE state = 'queued' AND leased = 1",
                (now_ms,),
            )
        return cursor.rowcount

    def due_now(self, tenant: str, channel: str, chat: str, error_kind: str, now_ms: int) -> int:
        """Make a chat's queued entries that last failed with `error_kind` due now (the
        platform takes messages again: the person wrote); how many."""
        with transaction(self.conn):
            cursor = self.conn.execute(
                "UPDATE outbox SET due_ms = ? WHERE state = 'queued' AND tenant = ?"
                " AND channel = ? AND chat = ? AND last_error = ? AND due_ms > ?",
                (now_ms, tenant, channel, chat, error_kind, now_ms),
            )
        return cursor.rowcount

    def get(self, entry_id: int) -> OutboxEntry | None:
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM outbox WHERE id = ?", (entry_id,)
        ).fetchone()
        return OutboxEntry(*row) if row else None

    def failures(
        self, tenant: str | None = None, channel: str | None = None, chat: str | None = None
    ) -> list[OutboxEntry]:
        """Dead entries and queued ones that have failed at least once, newest first;
        all tenants' when `tenant` is None (the operator's view)."""
        sql = f"SELECT {_COLUMNS} FROM outbox WHERE (state = 'dead' OR last_error != '')"
        args: list[Any] = []
        for column, value in (("tenant", tenant), ("channel", channel), ("chat", chat)):
            if value is not None:
                sql += f" AND {column} = ?"
                args.append(value)
        sql += " ORDER BY id DESC"
        return [OutboxEntry(*row) for row in self.conn.execute(sql, args)]

    def earliest_ms(self) -> int | None:
        """When the next queued entry (or expiring lease) is due; None: nothing queued."""
        (earliest,) = self.conn.execute(
            "SELECT MIN(due_ms) FROM outbox WHERE state = 'queued'"
        ).fetchone()
        return int(earliest) if earliest is not None else None

    def prune(self, now_ms: int) -> int:
        """Forget delivered and dead entries past their retention (keys included)."""
        policy = self.policy
        with transaction(self.conn):
            cursor = self.conn.execute(
                "DELETE FROM outbox WHERE state != 'queued' AND done_ms < CASE state"
                " WHEN 'delivered' THEN ? ELSE ? END",
                (now_ms - policy.keep_delivered_ms, now_ms - policy.keep_dead_ms),
            )
            self.conn.execute("DELETE FROM outbox_parts WHERE entry NOT IN (SELECT id FROM outbox)")
        return cursor.rowcount
