"""The durable inbox: every Telegram update is stored before Telegram learns it arrived.

Telegram forgets an update once it is confirmed (the next `getUpdates` offset,
or a webhook answered 200). So `store` commits each update (table
`channel_inbox`, keyed by bot and `update_id`, so a redelivery adds nothing)
before that happens (one with a lone surrogate, no valid Unicode, as
ASCII-escaped JSON that reads back the same), already taken by this process
(`working`, owner: this process): a `getUpdates` answer is ONE statement,
`INSERT ... VALUES (...), (...) ON CONFLICT (source, update_id) DO NOTHING
RETURNING update_id`, and the ids it returns are the updates this process
stored first (of two instances storing one update at once, exactly one gets it
back). The channel then `take`s each update the library hands it, without a
statement: one this process stored is answered, once; one it did not store is
a redelivery (answered, being answered, or recovered) and is skipped. It marks
the update `done` once its answer was delivered or kept in the outbox, or
`dropped` when it was too old to answer (the person is told): two statements
per update at most, the store (one per `getUpdates` answer) and the done (one
for all the updates marked while the previous mark was being written: a group
commit; `bridge.channels.common.inbox_marks`, shared with WhatsApp's inbox).

What a process left unfinished (killed, or stopped before it got to it) is
handed to the next one by `recover`, oldest first, so it is answered after
a restart in each chat's order; an update whose answer already waits in the
outbox (`reply:<msg>` for that chat) counts as done and is not answered
twice. A done row keeps only its ids (the text is dropped at once) and is
pruned after `KEEP_MS` (`bridge.channels.common.inbox_marks`). A streamed
answer's first draft records the messages it is shown in (`showing`, column
`shown`): the process that answers the update after a kill -9 (or a stop)
edits those messages into its answer instead of leaving a half draft with its
Stop button above a second answer.

The store runs on the `Database` protocol (`bridge.storage`, SQLite or
PostgreSQL) and every write is ONE statement, never a transaction held
across an await (the rule of `bridge.schedule.outbox` while roost.db has a
second way in). `recover` is two: the answered ones marked done, then one
claim `UPDATE ... WHERE (source, update_id) IN (SELECT ... {skip_locked})
RETURNING`, `FOR UPDATE SKIP LOCKED` on PostgreSQL (the outbox's claim), so
two processes recovering at once never take one update both. One daemon
holds a home at a time (the instance lock), so every open row of another
owner belongs to a process that is gone. Instances sharing one database
(`[database] url` PostgreSQL, webhook mode) store updates `new`, owned by
nobody, and take them per chat under a lease instead of `take` and
`recover` (`bridge.channels.telegram.shared`, over
`bridge.channels.common.shared`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bridge.channels.common.inbox_marks import InboxMarks, message_ids, stored_json
from bridge.storage.protocol import Database

_ROW = "update_id, chat, msg, payload, sent_ms, shown"


@dataclass(frozen=True, slots=True)
class Stored:
    """One update taken over from an earlier process."""

    update_id: int
    chat: str  # roost's chat id ("<chat>" private, "<group>:<user>" in a group), or ''
    msg: str  # the message id its answer is kept under ('' when it has none)
    payload: dict[str, Any]
    sent_ms: int
    shown: tuple[int, ...] = ()  # the messages a draft of its answer was shown in


def updates_in(body: object) -> list[dict[str, Any]]:
    """The updates of a `getUpdates` answer's parsed body ([] for anything else)."""
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


class UpdateInbox(InboxMarks):
    """The inbox of one bot (`source`, e.g. "telegram:123456") for one process (`owner`);
    its marks, count and prune are `InboxMarks`'."""

    def __init__(
        self,
        db: Database,
        source: str,
        owner: str,
        *,
        channel: str = "telegram",
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(db, source, owner, channel=channel, clock=clock)
        self._stored: set[int] = set()  # stored first by this process, not taken yet

    async def store(self, updates: Iterable[Mapping[str, Any]], *, taken: bool = True) -> int:
        """Commit the updates not stored before, taken by this process (ONE statement);
        returns how many were new. Raises `StorageError` when they could not be stored
        (then nothing is confirmed to Telegram: it sends them again). Not `taken`
        (instances sharing the bot: `bridge.channels.telegram.shared`), they are stored
        `new`, owned by nobody: the holder of the chat's lease takes them."""
        now, owner = self._now_ms(), self.owner if taken else ""
        rows: dict[int, tuple[object, ...]] = {}
        for update in updates:
            update_id = update.get("update_id")
            if not isinstance(update_id, int) or isinstance(update_id, bool):
                continue
            chat, msg, sent = describe(update)
            payload = stored_json(update)
            rows.setdefault(
                update_id,
                (self.source, update_id, chat, msg, payload, owner, now, sent or now),
            )
        if not rows:
            return 0
        state = "working" if taken else "new"
        values = ", ".join([f"(?, ?, ?, ?, ?, '{state}', ?, ?, ?)"] * len(rows))
        new = await self.db.fetch_all(
            "INSERT INTO channel_inbox (source, update_id, chat, msg, payload, state, owner,"
            f" received_ms, sent_ms) VALUES {values}"
            " ON CONFLICT (source, update_id) DO NOTHING RETURNING update_id",
            [v for row in rows.values() for v in row],
        )
        if taken:
            self._stored.update(int(uid) for (uid,) in new)
        return len(new)

    def take(self, update_id: int) -> bool:
        """Whether this process answers an update it was handed: it does when its own
        `store` added it (once); not when the update was stored before (a redelivery:
        answered, being answered, or recovered). No statement."""
        if update_id in self._stored:
            self._stored.discard(update_id)
            return True
        return False

    async def recover(self) -> list[Stored]:
        """Take over what earlier processes left unanswered, oldest first (one whose
        answer waits in the outbox counts as answered: `InboxMarks.left_open`)."""
        rows = await self.left_open(_ROW)
        return sorted(
            (
                Stored(int(u), str(c), str(m), json.loads(p), int(sent), message_ids(shown))
                for u, c, m, p, sent, shown in rows
            ),
            key=lambda s: s.update_id,
        )

    async def showing(self, update_id: int, message_ids: Iterable[int]) -> None:
        """A draft of the update's answer is shown in `message_ids` (ONE statement): the
        process that answers it after this one is killed edits them into its answer.
        Raises `StorageError` when it could not be written."""
        shown = ",".join(str(int(m)) for m in message_ids)
        await self.db.execute(
            "UPDATE channel_inbox SET shown = ? WHERE source = ? AND update_id = ?",
            (shown, self.source, update_id),
        )
