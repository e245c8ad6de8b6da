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
The store runs on the `Database` protocol (`bridge.storage`), and every write
is ONE statement (no transaction held across an await): a claim is one
`UPDATE ... WHERE id IN (SELECT ... {skip_locked}) RETURNING`, `FOR UPDATE
SKIP LOCKED` on PostgreSQL, so two instances never hand out one entry, and
`failed` writes only if the attempts it read are still there. On SQLite a
transaction held open across awaits would keep the one write lock while
every other task's write waits for it.
A message delivered in several parts records each part as it arrives
(`parts`, `bridge.schedule.outbox_parts`): a retry resumes at the first part
that did not arrive and never sends one twice.

A new entry notifies `WAKE_TOPIC` (`db.notify`): the scheduler of the
daemon, or of any instance on the database, wakes to deliver it (`roost send
--to` from a shell included).

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

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Final

from bridge.schedule.outbox_parts import OutboxPart, OutboxParts
from bridge.storage.protocol import Database
from bridge.types.masked import Masked, require

ERROR_CHARS: Final = 200
WAKE_TOPIC: Final = "schedule"  # notified by every write that gives the scheduler work


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
    """The outbox over a `Database` (injected by the composition root)."""

    def __init__(self, db: Database, policy: OutboxPolicy | None = None) -> None:
        self.db = db
        self.policy = policy or OutboxPolicy()
        self.parts = OutboxParts(db)  # what of a multi-part entry has arrived

    async def enqueue(
        self,
        tenant: str,
        channel: str,
        chat: str,
        text: Masked,
        key: str,
        *,
        now_ms: int,
        parts: Sequence[OutboxPart] = (),
    ) -> Enqueued:
        """Store a message due now; a key already known for this chat adds nothing.
        Only masked text (`Unmasked`). `parts` (what the person already sees of it) are
        recorded before the new entry can be claimed: it is stored leased, as if being
        delivered, and released once they are in (a crash between: the next start's
        `release_leases` makes it due)."""
        if not key:
            raise ValueError("an outbox entry needs an idempotency key")
        require(text, "the outbox")
        held = bool(parts)
        new = await self.db.fetch_value(
            "INSERT INTO outbox (tenant, channel, chat, key, text, state, created_ms, due_ms,"
            " leased) VALUES (?, ?, ?, ?, ?, 'queued', ?, ?, ?)"
            " ON CONFLICT (tenant, channel, chat, key) DO NOTHING RETURNING id",
            (tenant, channel, chat, key, str(text), now_ms,
             now_ms + self.policy.lease_ms if held else now_ms, int(held)),
        )  # fmt: skip
        if new is None:
            existing = await self.db.fetch_value(
                "SELECT id FROM outbox WHERE tenant = ? AND channel = ? AND chat = ? AND key = ?",
                (tenant, channel, chat, key),
            )
            return Enqueued(int(existing), False)
        if held:
            await self.parts.put(int(new), parts)
            await self.db.execute(
                "UPDATE outbox SET due_ms = ?, leased = 0 WHERE id = ?", (now_ms, int(new))
            )
        await self.db.notify(WAKE_TOPIC)  # a scheduler in any process delivers it now
        return Enqueued(int(new), True)

    async def claim(self, now_ms: int, limit: int = 50) -> list[OutboxEntry]:
        """Lease up to `limit` due entries (the earliest due first), the oldest queued one
        of each chat only; in id order. Entries past their attempts or age are
        dead-lettered instead of handed out. Each step is one statement: on PostgreSQL
        rows another instance is claiming are skipped, not waited for (SKIP LOCKED)."""
        policy, db = self.policy, self.db
        await db.execute(
            "UPDATE outbox SET state = 'dead', done_ms = ?,"
            " last_error = CASE WHEN last_error = '' THEN 'expired' ELSE last_error END"
            " WHERE state = 'queued' AND due_ms <= ?"
            " AND (attempts >= ? OR (attempts > 0 AND created_ms <= ?))",
            (now_ms, now_ms, policy.max_attempts, now_ms - policy.max_age_ms),
        )
        rows = await db.fetch_all(
            "UPDATE outbox SET due_ms = ?, attempts = attempts + 1, leased = 1"
            " WHERE id IN (SELECT id FROM outbox AS o WHERE state = 'queued' AND due_ms <= ?"
            " AND NOT EXISTS (SELECT 1 FROM outbox AS e WHERE e.state = 'queued'"
            " AND e.tenant = o.tenant AND e.channel = o.channel AND e.chat = o.chat"
            f" AND e.id < o.id) ORDER BY due_ms, id LIMIT ? {db.dialect.skip_locked})"
            f" RETURNING {_COLUMNS}",
            (now_ms + policy.lease_ms, now_ms, limit),
        )
        return sorted((OutboxEntry(*row) for row in rows), key=lambda e: e.id)

    async def delivered(self, entry_id: int, now_ms: int) -> bool:
        changed = await self.db.execute(
            "UPDATE outbox SET state = 'delivered', done_ms = ?, last_error = '', leased = 0"
            " WHERE id = ? AND state = 'queued'",
            (now_ms, entry_id),
        )
        return changed == 1

    async def failed(
        self,
        entry_id: int,
        error_kind: str,
        now_ms: int,
        *,
        permanent: bool = False,
        retry_after_ms: int = 0,
    ) -> str | None:
        """Record a failed attempt: back off (at least `retry_after_ms`), or dead-letter.
        Returns the new state ('queued' or 'dead'), None when it is no longer queued
        (or was claimed again meanwhile: the write is conditional on the attempts read)."""
        policy, db = self.policy, self.db
        row = await db.fetch_one(
            "SELECT attempts, created_ms FROM outbox WHERE id = ? AND state = 'queued'",
            (entry_id,),
        )
        if row is None:
            return None
        attempts, created_ms = int(row[0]), int(row[1])
        wait = max(backoff_ms(attempts, policy.base_ms, policy.cap_ms), retry_after_ms)
        dead = (
            permanent
            or attempts >= policy.max_attempts
            or now_ms + wait - created_ms > policy.max_age_ms
        )
        changed = await db.execute(
            "UPDATE outbox SET state = ?, due_ms = ?, done_ms = ?, last_error = ?, leased = 0"
            " WHERE id = ? AND state = 'queued' AND attempts = ?",
            (
                "dead" if dead else "queued",
                now_ms + wait,
                now_ms if dead else None,
                error_kind[:ERROR_CHARS],
                entry_id,
                attempts,
            ),
        )
        if changed == 0:
            return None
        return "dead" if dead else "queued"

    async def release_leases(self, now_ms: int) -> int:
        """Make every leased entry due now (at start-up: their holder is gone)."""
        return await self.db.execute(
            "UPDATE outbox SET due_ms = ?, leased = 0 WHERE state = 'queued' AND leased = 1",
            (now_ms,),
        )

    async def due_now(
        self, tenant: str, channel: str, chat: str, error_kind: str, now_ms: int
    ) -> int:
        """Make a chat's queued entries that last failed with `error_kind` due now (the
        platform takes messages again: the person wrote); how many."""
        return await self.db.execute(
            "UPDATE outbox SET due_ms = ? WHERE state = 'queued' AND tenant = ?"
            " AND channel = ? AND chat = ? AND last_error = ? AND due_ms > ?",
            (now_ms, tenant, channel, chat, error_kind, now_ms),
        )

    async def get(self, entry_id: int) -> OutboxEntry | None:
        row = await self.db.fetch_one(f"SELECT {_COLUMNS} FROM outbox WHERE id = ?", (entry_id,))
        return OutboxEntry(*row) if row else None

    async def failures(
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
        return [OutboxEntry(*row) for row in await self.db.fetch_all(sql, args)]

    async def earliest_ms(self) -> int | None:
        """When the next queued entry (or expiring lease) is due; None: nothing queued."""
        earliest = await self.db.fetch_value(
            "SELECT MIN(due_ms) FROM outbox WHERE state = 'queued'"
        )
        return int(earliest) if earliest is not None else None

    async def prune(self, now_ms: int) -> int:
        """Forget delivered and dead entries past their retention (keys included), then
        the parts of entries that are gone (a crash between: the next prune takes them)."""
        policy = self.policy
        removed = await self.db.execute(
            "DELETE FROM outbox WHERE (state = 'delivered' AND done_ms < ?)"
            " OR (state = 'dead' AND done_ms < ?)",
            (now_ms - policy.keep_delivered_ms, now_ms - policy.keep_dead_ms),
        )
        await self.db.execute("DELETE FROM outbox_parts WHERE entry NOT IN (SELECT id FROM outbox)")
        return removed
