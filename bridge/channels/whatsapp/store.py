"""What the WhatsApp channel keeps in roost.db (tables of the WhatsApp migration, core/db.py).

`whatsapp_seen`: every message id a webhook brought, as `key(wamid)` (a
hash: a wamid spells the sender's number), with when. Meta delivers a
webhook again until it gets a 200 and may send one message twice; the
first `first_time(wamid)` wins, in one INSERT, so a duplicate is answered
never, also after a restart. Ids are kept a week (`keep_seen_ms`), longer
than Meta retries.

`whatsapp_window`: when a known person (one resolving to a tenant) last
wrote: the 24-hour customer-service window for proactive messages.

`whatsapp_sent`: the messages roost sent (answers and outbox entries, by
key, with the outbox entry's id), how (`via`: reply, text, template) and the
last status Meta reported: sent < delivered < read, or failed with Meta's
error code (a later status never goes back; failed always wins).
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass

RANK = {"accepted": 0, "sent": 1, "delivered": 2, "read": 3, "failed": 9}
DAY_MS = 86_400_000


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


class WhatsAppStore:
    """The three tables over the roost's one connection (autocommit mode)."""

    def __init__(
        self, conn: sqlite3.Connection, keep_seen_ms: int = 7 * DAY_MS, prune_every: int = 1000
    ) -> None:
        self.conn = conn
        self.keep_seen_ms = keep_seen_ms
        self._prune_every = prune_every
        self._inserts = 0

    def first_time(self, wamid: str, now_ms: int) -> bool:
        """Record the message id; False when it was recorded before (a duplicate)."""
        cursor = self.conn.execute(
            "INSERT OR IGNORE INTO whatsapp_seen (msg_key, seen_ms) VALUES (?, ?)",
            (key(wamid), now_ms),
        )
        self._inserts += 1
        if self._inserts % self._prune_every == 0:
            self.prune(now_ms)
        return cursor.rowcount == 1

    def wrote(self, tenant: str, wa_id: str, now_ms: int) -> None:
        """A known person wrote now: their window is open for 24 hours."""
        self.conn.execute(
            "INSERT INTO whatsapp_window (tenant, wa_id, last_in_ms) VALUES (?, ?, ?)"
            " ON CONFLICT (wa_id) DO UPDATE SET tenant = excluded.tenant,"
            " last_in_ms = max(last_in_ms, excluded.last_in_ms)",
            (tenant, wa_id, now_ms),
        )

    def last_in_ms(self, wa_id: str) -> int | None:
        row = self.conn.execute(
            "SELECT last_in_ms FROM whatsapp_window WHERE wa_id = ?", (wa_id,)
        ).fetchone()
        return int(row[0]) if row else None

    def sent(
        self, wamid: str, tenant: str, chat: str, via: str, now_ms: int, entry: int | None = None
    ) -> None:
        self.conn.execute(
            "INSERT OR IGNORE INTO whatsapp_sent (msg_key, tenant, chat, entry, via, status,"
            " error, sent_ms, updated_ms) VALUES (?, ?, ?, ?, ?, 'accepted', NULL, ?, ?)",
            (key(wamid), tenant, chat, entry, via, now_ms, now_ms),
        )

    def status(self, wamid: str, status: str, error: int | None, now_ms: int) -> Sent | None:
        """Meta's status for a sent message; the row as it now is (None: not ours)."""
        row = self._get(key(wamid))
        if row is None or status not in RANK:
            return row
        if status == "failed" or RANK[status] > RANK.get(row.status, 0):
            self.conn.execute(
                "UPDATE whatsapp_sent SET status = ?, error = ?, updated_ms = ? WHERE msg_key = ?",
                (status, error if status == "failed" else None, now_ms, row.msg_key),
            )
            return self._get(row.msg_key)
        return row

    def recent(self, tenant: str, chat: str, limit: int = 5) -> list[Sent]:
        """The last messages sent to a chat from the outbox, newest first."""
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM whatsapp_sent WHERE tenant = ? AND chat = ?"
            " AND entry IS NOT NULL ORDER BY sent_ms DESC LIMIT ?",
            (tenant, chat, limit),
        ).fetchall()
        return [Sent(*r) for r in rows]

    def prune(self, now_ms: int) -> None:
        self.conn.execute(
            "DELETE FROM whatsapp_seen WHERE seen_ms < ?", (now_ms - self.keep_seen_ms,)
        )
        self.conn.execute("DELETE FROM whatsapp_sent WHERE updated_ms < ?", (now_ms - 30 * DAY_MS,))

    def _get(self, msg_key: str) -> Sent | None:
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM whatsapp_sent WHERE msg_key = ?", (msg_key,)
        ).fetchone()
        return Sent(*row) if row else None


_COLUMNS = "msg_key, tenant, chat, entry, via, status, error, sent_ms, updated_ms"
