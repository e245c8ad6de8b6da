"""What the WhatsApp channel keeps in roost.db (tables of the WhatsApp migration).

`whatsapp_seen`: every message id a webhook brought, as `key(wamid)` (a
hash: a wamid spells the sender's number), with when. Meta delivers a
webhook again until it gets a 200 and may send one message twice; the
first `first_time(wamid)` wins, in one `INSERT ... ON CONFLICT DO NOTHING
RETURNING`, so a duplicate is answered never, also after a restart, and of
two instances taking one message at once exactly one gets it. Ids are kept
a week (`keep_seen_ms`); the channel answers no message whose timestamp is
older than that less a day (`WhatsAppChannel.max_age_ms`), so an id pruned
here can never be answered again.

`whatsapp_window`: when a known person (one resolving to a tenant) last
wrote: the 24-hour customer-service window for proactive messages.

`whatsapp_sent`: the messages roost sent (answers and outbox entries, by
key, with the outbox entry's id), how (`via`: reply, text, template) and the
last status Meta reported: sent < delivered < read, or failed with Meta's
error code (a later status never goes back; failed always wins), in one
conditional UPDATE, so statuses racing each other still end at the highest.

The store runs on the `Database` protocol (`bridge.storage`, SQLite or
PostgreSQL); every write is ONE statement, never a transaction held across
an await (the rule of `bridge.schedule.outbox` while roost.db has a second
way in).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from bridge.storage.protocol import Database

RANK = {"accepted": 0, "sent": 1, "delivered": 2, "read": 3, "failed": 9}
DAY_MS = 86_400_000


# the first sighting of a message id wins (`first_time`, and the shared inbox's store unit)
SEEN_SQL = (
    "INSERT INTO whatsapp_seen (msg_key, seen_ms) VALUES (?, ?)"
    " ON CONFLICT (msg_key) DO NOTHING RETURNING msg_key"
)


def key(wamid: str) -> str:
    """A message id's key in the tables (and the `msg_id` roost gives the message)."""
    return hashlib.sha256(wamid.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Sent:
    msg_key: str
    tenant: str
    chat: str
    entry: int | None  # the outbox entry it delivered (None: an answer)
    via: str  # reply | text | template
    status: str  # accepted | sent | delivered | read | failed
    error: int | None
    sent_ms: int
    updated_ms: int


# A status's rank in SQL (RANK's order): the UPDATE keeps the highest.
_RANK_SQL = (
    "CASE {0} WHEN 'accepted' THEN 0 WHEN 'sent' THEN 1 WHEN 'delivered' THEN 2"
    " WHEN 'read' THEN 3 WHEN 'failed' THEN 9 ELSE 0 END"
)


class WhatsAppStore:
    """The three tables over a `Database` (injected by the composition root)."""

    def __init__(
        self, db: Database, keep_seen_ms: int = 7 * DAY_MS, prune_every: int = 1000
    ) -> None:
        self.db = db
        self.keep_seen_ms = keep_seen_ms
        self._prune_every = prune_every
        self._inserts = 0

    async def first_time(self, wamid: str, now_ms: int) -> bool:
        """Record the message id; False when it was recorded before (a duplicate)."""
        new = await self.db.fetch_value(SEEN_SQL, (key(wamid), now_ms))
        await self.counted(1, now_ms)
        return new is not None

    async def counted(self, inserts: int, now_ms: int) -> bool:
        """`inserts` message ids were recorded (here or by the shared inbox): now and then
        the old ones are pruned (True: now)."""
        before, self._inserts = self._inserts, self._inserts + inserts
        if before // self._prune_every == self._inserts // self._prune_every:
            return False
        await self.prune(now_ms)
        return True

    async def wrote(self, tenant: str, wa_id: str, now_ms: int) -> None:
        """A known person wrote now: their window is open for 24 hours."""
        latest = self.db.dialect.greatest.format(
            "whatsapp_window.last_in_ms", "excluded.last_in_ms"
        )
        await self.db.execute(
            "INSERT INTO whatsapp_window (tenant, wa_id, last_in_ms) VALUES (?, ?, ?)"
            " ON CONFLICT (wa_id) DO UPDATE SET tenant = excluded.tenant,"
            f" last_in_ms = {latest}",
            (tenant, wa_id, now_ms),
        )

    async def last_in_ms(self, wa_id: str) -> int | None:
        value = await self.db.fetch_value(
            "SELECT last_in_ms FROM whatsapp_window WHERE wa_id = ?", (wa_id,)
        )
        return int(value) if value is not None else None

    async def sent(
        self, wamid: str, tenant: str, chat: str, via: str, now_ms: int, entry: int | None = None
    ) -> None:
        await self.db.execute(
            "INSERT INTO whatsapp_sent (msg_key, tenant, chat, entry, via, status,"
            " error, sent_ms, updated_ms) VALUES (?, ?, ?, ?, ?, 'accepted', NULL, ?, ?)"
            " ON CONFLICT (msg_key) DO NOTHING",
            (key(wamid), tenant, chat, entry, via, now_ms, now_ms),
        )

    async def status(self, wamid: str, status: str, error: int | None, now_ms: int) -> Sent | None:
        """Meta's status for a sent message; the row as it now is (None: not ours). One
        conditional UPDATE: a status of a lower rank than the row's (a late `sent` after
        `read`) changes nothing; `failed` always wins."""
        msg_key = key(wamid)
        if status in RANK:
            row = await self.db.fetch_one(
                "UPDATE whatsapp_sent SET status = :status, error = :error, updated_ms = :now"
                " WHERE msg_key = :key AND (:status = 'failed'"
                f" OR {_RANK_SQL.format('status')} < {_RANK_SQL.format(':status')})"
                f" RETURNING {_COLUMNS}",
                {
                    "status": status,
                    "error": error if status == "failed" else None,
                    "now": now_ms,
                    "key": msg_key,
                },
            )
            if row is not None:
                return Sent(*row)
        return await self._get(msg_key)

    async def recent(self, tenant: str, chat: str, limit: int = 5) -> list[Sent]:
        """The last messages sent to a chat from the outbox, newest first."""
        rows = await self.db.fetch_all(
            f"SELECT {_COLUMNS} FROM whatsapp_sent WHERE tenant = ? AND chat = ?"
            " AND entry IS NOT NULL ORDER BY sent_ms DESC LIMIT ?",
            (tenant, chat, limit),
        )
        return [Sent(*r) for r in rows]

    async def prune(self, now_ms: int) -> None:
        await self.db.execute(
            "DELETE FROM whatsapp_seen WHERE seen_ms < ?", (now_ms - self.keep_seen_ms,)
        )
        await self.db.execute(
            "DELETE FROM whatsapp_sent WHERE updated_ms < ?", (now_ms - 30 * DAY_MS,)
        )

    async def _get(self, msg_key: str) -> Sent | None:
        row = await self.db.fetch_one(
            f"SELECT {_COLUMNS} FROM whatsapp_sent WHERE msg_key = ?", (msg_key,)
        )
        return Sent(*row) if row else None


_COLUMNS = "msg_key, tenant, chat, entry, via, status, error, sent_ms, updated_ms"
