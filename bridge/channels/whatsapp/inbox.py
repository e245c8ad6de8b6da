"""WhatsApp's durable inbox, for instances that share one number (`[database] url` PostgreSQL).

Any instance may receive any webhook (a load balancer spreads them). Each
message of a delivery is stored BEFORE the webhook answers 200, in ONE
transaction per delivery (`store`, a unit on `Database.atomic`): its id is
recorded in `whatsapp_seen` (the first sighting wins: a redelivery, to this
instance or another, adds nothing, as on the single-instance path), and the
message goes into `channel_inbox` (source "whatsapp:<phone number id>",
chat: the sender's wa_id, msg: `store.key(wamid)`, state `new`, owned by
nobody). WhatsApp has no update number, so the row's `update_id` is the
source's next one (`MAX + 1`, by the database, in the same statement): the
order the database stored the messages, which is each person's order as
the webhooks came. Two instances storing at once may pick one number; on
PostgreSQL the second INSERT waits for the first's commit, adds nothing,
and is tried again with the next number (SQLite has one writer). Both
statements commit together, so a message is never seen-but-not-stored.

The rest (per person under a lease, oldest first, marked done, given up
after a few tries) is `bridge.channels.common.shared`; the marks are
`InboxMarks`'. `payload_of`/`incoming_of` turn a message into the row's
JSON and back.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from functools import partial
from typing import Any, Final

from bridge.channels.common.inbox_marks import InboxMarks
from bridge.channels.whatsapp.payload import Incoming, Media
from bridge.channels.whatsapp.store import SEEN_SQL, key
from bridge.storage.errors import StorageError
from bridge.storage.protocol import Database
from bridge.storage.units import Unit, fetch_one

TOPIC: Final = "whatsapp_inbox"
NUMBER_TRIES: Final = 64  # instances racing for the source's next number (one each at a time)

_INSERT = (
    "INSERT INTO channel_inbox (source, update_id, chat, msg, payload, state, owner,"
    " received_ms, sent_ms) SELECT CAST(? AS TEXT), COALESCE(MAX(update_id), 0) + 1,"
    " CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), 'new', '',"
    " CAST(? AS BIGINT), CAST(? AS BIGINT) FROM channel_inbox WHERE source = ?"
    " ON CONFLICT (source, update_id) DO NOTHING RETURNING update_id"
)

Row = tuple[str, str, str, str, int]  # msg key, chat, msg key, payload, sent ms


def payload_of(msg: Incoming) -> str:
    return json.dumps(asdict(msg), separators=(",", ":"), ensure_ascii=False)


def incoming_of(payload: dict[str, Any]) -> Incoming:
    """The message a row keeps (raises TypeError/KeyError/ValueError when it is not one)."""
    media = payload.get("media")
    fields = {**payload, "media": Media(**media) if isinstance(media, dict) else None}
    return Incoming(**fields)


def _stored(source: str, rows: Sequence[Row], now_ms: int) -> Unit[int]:
    """Record each message's id and store the new ones; how many were new."""
    new = 0
    for seen_key, chat, msg, payload, sent_ms in rows:
        if (yield fetch_one(SEEN_SQL, (seen_key, now_ms))) is None:
            continue  # seen before: a redelivery
        for _ in range(NUMBER_TRIES):
            params = (source, chat, msg, payload, now_ms, sent_ms, source)
            if (yield fetch_one(_INSERT, params)) is not None:
                new += 1
                break
        else:
            raise StorageError("whatsapp: no free inbox number after several tries")
    return new


class WhatsAppInbox(InboxMarks):
    """The inbox of one WhatsApp number for one process (`owner`: unique per start)."""

    def __init__(
        self,
        db: Database,
        phone_number_id: str,
        owner: str,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(db, f"whatsapp:{phone_number_id}", owner, channel="whatsapp", clock=clock)

    async def store(self, messages: Sequence[Incoming]) -> int:
        """Commit the messages not seen before (ONE transaction); how many were new.
        Raises `StorageError` when they could not be stored (then the webhook answers
        503 and Meta delivers it again)."""
        if not messages:
            return 0
        rows = [
            (key(m.wamid), m.sender, key(m.wamid), payload_of(m), m.timestamp * 1000)
            for m in messages
        ]
        return await self.db.atomic(partial(_stored, self.source, rows, self._now_ms()))
