"""Each chat's stored updates, taken oldest first by the holder of the chat's lease.

The statements of `bridge.channels.common.shared` (instances sharing one
bot or one WhatsApp number) on the durable inbox's table `channel_inbox`,
the same SQL on both backends, for any platform (`source`: "telegram:<bot>",
"whatsapp:<phone number id>"; `channel`: the outbox's channel name):
- `open_chats()`: the chats with open updates (`new`, or `working` for an
  owner that lost or never had the chat's lease) whose lease nobody holds
  now, by the database's clock: ONE statement;
- `claim(chat, owner)`: the chat's oldest open update, taken by `owner`
  and its `tries` counted (a poison update that kills every instance that
  takes it is given up after a few); `FOR UPDATE SKIP LOCKED` on
  PostgreSQL. Only the holder of the chat's lease calls it, so the chat's
  updates are taken one at a time, in order;
- `answered(row)`: whether the answer of an update taken before is already
  kept in the outbox (an instance died between keeping it and marking the
  update done): then it is marked done, not answered again.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from bridge.channels.common.inbox_marks import message_ids
from bridge.core.dispatch import lease_name as chat_lease
from bridge.storage.protocol import Database


@dataclass(frozen=True, slots=True)
class Taken:
    """One stored update taken by this instance."""

    update_id: int
    chat: str
    msg: str
    payload: dict[str, Any]
    tries: int  # this one included
    shown: tuple[int, ...] = ()  # the messages a draft of its answer was shown in


def lease_name(source: str, chat: str) -> str:
    """The lease of one person's chat of one source ("chat:telegram:<bot>:<chat>"), as the
    dispatcher (`bridge.core.dispatch`) names the chat "<source>:<chat>"."""
    return chat_lease(f"{source}:{chat}")


class ChatQueue:
    """The open updates of one source (a bot, a WhatsApp number), per chat."""

    def __init__(self, db: Database, source: str, *, channel: str = "telegram") -> None:
        self.db, self.source, self._channel = db, source, channel

    async def open_chats(self) -> list[str]:
        """Chats with open updates whose lease nobody holds now (oldest update first)."""
        db = self.db
        rows = await db.fetch_all(
            "SELECT chat, MIN(update_id) AS first FROM channel_inbox"
            " WHERE source = ? AND state IN ('new', 'working') AND NOT EXISTS"
            " (SELECT 1 FROM storage_leases AS l WHERE l.name = ? || channel_inbox.chat"
            f" AND l.expires_ms > {db.dialect.now_ms}) GROUP BY chat ORDER BY first",
            (self.source, lease_name(self.source, "")),
        )
        return [str(chat) for chat, _ in rows]

    async def has_open(self, chat: str) -> bool:
        row = await self.db.fetch_one(
            "SELECT 1 FROM channel_inbox WHERE source = ? AND chat = ?"
            " AND state IN ('new', 'working') LIMIT 1",
            (self.source, chat),
        )
        return row is not None

    async def claim(self, chat: str, owner: str) -> Taken | None:
        """Take the chat's oldest open update for `owner` (ONE statement); None: none."""
        db = self.db
        row = await db.fetch_one(
            "UPDATE channel_inbox SET state = 'working', owner = ?, tries = tries + 1"
            " WHERE source = ? AND state IN ('new', 'working')"
            " AND update_id = (SELECT update_id FROM channel_inbox"
            " WHERE source = ? AND chat = ? AND state IN ('new', 'working')"
            f" ORDER BY update_id LIMIT 1 {db.dialect.skip_locked})"
            " RETURNING update_id, chat, msg, payload, tries, shown",
            (owner, self.source, self.source, chat),
        )
        if row is None:
            return None
        uid, chat_, msg, payload, tries, shown = row
        return Taken(
            int(uid), str(chat_), str(msg), json.loads(payload), int(tries), message_ids(shown)
        )

    async def answered(self, taken: Taken) -> bool:
        """Whether the answer of `taken` is kept in the outbox already; then it is marked
        done (ONE statement)."""
        if not taken.msg:
            return False
        done = await self.db.execute(
            "UPDATE channel_inbox SET state = 'done', payload = '', done_ms = ?"
            " WHERE source = ? AND update_id = ? AND EXISTS (SELECT 1 FROM outbox AS o"
            " WHERE o.channel = ? AND o.chat = ? AND o.key = ?)",
            (
                int(time.time() * 1000),
                self.source,
                taken.update_id,
                self._channel,
                taken.chat,
                f"reply:{taken.msg}",
            ),
        )
        return done > 0
