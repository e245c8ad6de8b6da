"""The durable inbox: every Telegram update is stored before Telegram learns it arrived.

Telegram forgets an update once it is confirmed (the next `getUpdates`
offset, or a webhook answered 200). So `store` commits each update (table
`channel_inbox`, keyed by bot and `update_id`, so a redelivery adds nothing)
before that happens; the channel then `claim`s it (new -> working, by this
process) and marks it `done` once its answer was delivered or kept in the
outbox, or `dropped` when it was too old to answer (the person is told).
What a process left unfinished (killed, or stopped before it got to it) is
handed to the next one by `recover`, oldest first, so it is answered after
a restart in each chat's order; an update whose answer already waits in the
outbox (`reply:<msg>` for that chat) counts as done and is not answered
twice. A done row keeps only its ids (the text is dropped at once) and is
pruned after `KEEP_MS`.

`UpdateInbox` is the small store class the channel talks to; today it is
SQLite on the roost's connection. One daemon holds a home at a time (the
instance lock), so every row claimed by another owner belongs to a process
that is gone; a store shared by several live instances needs leases there.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from bridge.schedule.schema import transaction

KEEP_MS: Final = 3 * 86_400_000  # Telegram redelivers for at most a day; ids are kept longer
_ROW = "update_id, chat, msg, payload, sent_ms"


@dataclass(frozen=True, slots=True)
class Stored:
    """One update taken over from an earlier process."""

    update_id: int
    chat: str  # roost's chat id ("<chat>" private, "<group>:<user>" in a group), or ''
    msg: str  # the message id its answer is kept under ('' when it has none)
    payload: dict[str, Any]
    sent_ms: int


def updates_in(payload: bytes) -> list[dict[str, Any]]:
    """The updates of a `getUpdates` answer's body ([] for anything else)."""
    body = json.loads(payload)
    result = body.get("result") if isinstance(body, dict) and body.get("ok") else None
    return [u for u in result if isinstance(u, dict)] if isinstance(result, list) else []


def describe(update: Mapping[str, Any]) -> tuple[str, str, int | None]:
    """(roost chat id, message id, when the person sent it in ms) of a raw update;
    ('', '', None) for kinds roost does not answer."""
    query = update.get("callback_query")
    if isinstance(query, Mapping):
        message, user = query.get("message"), query.get("from")
        msg = f"cb{query.get('id', '')}"
        sent = None
    else:
        message = update.get("message")
        user = message.get("from") if isinstance(message, Mapping) else None
        msg = str(message.get("message_id", "")) if isinstance(message, Mapping) else ""
        sent = message.get("date") if isinstance(message, Mapping) else None
    if not isinstance(message, Mapping) or not isinstance(user, Mapping):
        return "", "", None
    chat = message.get("chat")
    if not isinstance(chat, Mapping):
        return "", "", None
    key = str(chat.get("id"))
    if chat.get("type") != "private":
        key = f"{key}:{user.get('id')}"
    return key, msg, int(sent) * 1000 if isinstance(sent, int) else None


class UpdateInbox:
    """The inbox of one bot (`source`, e.g. "telegram:123456") for one process (`owner`)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        source: str,
        owner: str,
        *,
        channel: str = "telegram",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.conn, self.source, self.owner = conn, source, owner
        self._channel, self._clock = channel, clock

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def store(self, updates: Iterable[Mapping[str, Any]]) -> int:
        """Commit updates not seen before (one transaction); returns how many were new."""
        now = self._now_ms()
        rows = []
        for update in updates:
            update_id = update.get("update_id")
            if not isinstance(update_id, int):
                continue
            chat, msg, sent = describe(update)
            payload = json.dumps(update, separators=(",", ":"), ensure_ascii=False)
            rows.append((self.source, update_id, chat, msg, payload, now, sent or now))
        if not rows:
            return 0
        with transaction(self.conn):
            before = self.conn.total_changes
            self.conn.executemany(
                "INSERT INTO channel_inbox (source, update_id, chat, msg, payload, state,"
                " received_ms, sent_ms) VALUES (?, ?, ?, ?, ?, 'new', ?, ?)"
                " ON CONFLICT (source, update_id) DO NOTHING",
                rows,
            )
            return self.conn.total_changes - before

    def claim(self, update_id: int) -> bool:
        """Take a new update (True), or leave one that is answered or being answered."""
        cursor = self.conn.execute(  # one statement: a transaction of its own (or joins one)
            "UPDATE channel_inbox SET state = 'working', owner = ?"
            " WHERE source = ? AND update_id = ? AND state = 'new'",
            (self.owner, self.source, update_id),
        )
        return cursor.rowcount == 1

    def done(self, update_id: int, *, dropped: bool = False) -> None:
        """The update is answered (its answer delivered or kept), or dropped."""
        self.conn.execute(  # one statement: a transaction of its own (or joins one)
            "UPDATE channel_inbox SET state = ?, payload = '', done_ms = ?"
            " WHERE source = ? AND update_id = ?",
            ("dropped" if dropped else "done", self._now_ms(), self.source, update_id),
        )

    def recover(self) -> list[Stored]:
        """Take over what earlier processes left unanswered, oldest first."""
        now = self._now_ms()
        with transaction(self.conn):
            self.conn.execute(  # answered already: the answer waits in the outbox
                "UPDATE channel_inbox SET state = 'done', payload = '', done_ms = ?"
                " WHERE source = ? AND state IN ('new', 'working') AND owner != ? AND msg != ''"
                " AND EXISTS (SELECT 1 FROM outbox AS o WHERE o.channel = ?"
                " AND o.chat = channel_inbox.chat AND o.key = 'reply:' || channel_inbox.msg)",
                (now, self.source, self.owner, self._channel),
            )
            rows = self.conn.execute(
                f"SELECT {_ROW} FROM channel_inbox WHERE source = ? AND owner != ?"
                " AND state IN ('new', 'working') ORDER BY update_id",
                (self.source, self.owner),
            ).fetchall()
            self.conn.executemany(
                "UPDATE channel_inbox SET state = 'working', owner = ?"
                " WHERE source = ? AND update_id = ?",
                [(self.owner, self.source, row[0]) for row in rows],
            )
        return [
            Stored(int(uid), chat, msg, json.loads(payload), int(sent))
            for uid, chat, msg, payload, sent in rows
        ]

    def open_count(self) -> int:
        """Updates not answered yet (any owner)."""
        (count,) = self.conn.execute(
            "SELECT COUNT(*) FROM channel_inbox WHERE source = ? AND state IN ('new', 'working')",
            (self.source,),
        ).fetchone()
        return int(count)

    def prune(self) -> int:
        """Forget answered and dropped updates past `KEEP_MS`."""
        with transaction(self.conn):
            cursor = self.conn.execute(
                "DELETE FROM channel_inbox WHERE source = ? AND state IN ('done', 'dropped')"
                " AND done_ms < ?",
                (self.source, self._now_ms() - KEEP_MS),
            )
        return cursor.rowcount
