"""The Matrix channel's durable inbox: a batch's messages and its sync token, committed together.

A sync batch's `next_batch` tells the homeserver nothing: the token is ours to
keep, and once it is stored a restart syncs from after the batch. So the
messages the channel takes from a batch (those it will answer) are stored in
`channel_inbox` (source `matrix:<bot account>`, chat, msg: the event id, the
message as JSON, state `working`, owner: this process) in the SAME transaction
that stores the token (`take`, one unit on `Database.atomic`). A message is
then never past the token without a row: a process killed (kill -9, a power
cut) or stopped before it answered leaves the row open, and the next process
(or, with instances sharing the account, the next holder of its sync lease)
takes it over at start (`recover`, oldest first) and answers it. A row's
`tries` counts the runs that began to handle it: the one that stored it, and
each later one as it begins (`started`, once the chat's earlier messages are
done), so a message whose handling kills its process is given up once
MAX_TRIES runs began it, rather than taken by every start, while the messages
queued behind it in its chat, never begun, are answered after it. A row is
marked `done` once its message was handled (answered, refused, or given up
after an error a retry would not fix); one whose answer already waits in the
outbox (`reply:<event id>`) counts as done and is not answered twice. A row's
number (`update_id`) is the source's next one, as WhatsApp's inbox numbers its
rows (`MAX + 1`, by the database). Nothing keeps an event id from being
stored twice (no index on `msg`): a batch is taken twice only when a holder
that lost its lease while it lived on commits after the next holder read the
token, and then both rows are answered. The marks, the count and the pruning
are `InboxMarks`'.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any, Final

from bridge.channels.common.inbox_marks import InboxMarks, stored_json
from bridge.channels.matrix.events import Media, Message
from bridge.channels.matrix.store import SAVE_BATCH
from bridge.storage.errors import StorageError
from bridge.storage.protocol import Database
from bridge.storage.units import Unit, execute, fetch_one

NUMBER_TRIES: Final = 64  # instances racing for the source's next number (PostgreSQL)
MAX_TRIES: Final = 3  # runs that began a message without finishing it: then it is given up

_INSERT = (
    "INSERT INTO channel_inbox (source, update_id, chat, msg, payload, state, owner,"
    " received_ms, sent_ms, tries) SELECT CAST(? AS TEXT), COALESCE(MAX(update_id), 0) + 1,"
    " CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), 'working', CAST(? AS TEXT),"
    " CAST(? AS BIGINT), CAST(? AS BIGINT), 1 FROM channel_inbox WHERE source = ?"
    " ON CONFLICT (source, update_id) DO NOTHING RETURNING update_id"
)


@dataclass(frozen=True, slots=True)
class Kept:
    """A message an earlier process took and did not finish."""

    update_id: int
    message: Message | None  # None: the row does not hold a message this version reads
    tries: int = 1  # the runs that began it (MAX_TRIES of them: given up)


def payload_of(msg: Message) -> str:
    """The message as stored JSON (`stored_json`: one with a lone surrogate, which a
    homeserver may pass on, ASCII-escaped)."""
    return stored_json(asdict(msg))


def message_of(payload: dict[str, Any]) -> Message:
    """The message a row keeps (raises TypeError/KeyError/ValueError when it is not one)."""
    media = payload.get("media")
    fields = {**payload, "media": Media(**media) if isinstance(media, dict) else None}
    return Message(**fields)


def _taken(
    source: str,
    owner: str,
    account: str,
    messages: Sequence[tuple[str, Message]],
    token: str,
    now_ms: int,
) -> Unit[list[int]]:
    """Store each (chat, message), then the sync token; each message's row number."""
    ids: list[int] = []
    for chat, msg in messages:
        for _ in range(NUMBER_TRIES):
            params = (source, chat, msg.event_id, payload_of(msg), owner, now_ms, now_ms)
            row = yield fetch_one(_INSERT, (*params, source))
            if row is not None:
                ids.append(int(row[0]))
                break
        else:
            raise StorageError("matrix: no free inbox number after several tries")
    yield execute(SAVE_BATCH, (account, token, now_ms))
    return ids


class MatrixInbox(InboxMarks):
    """The inbox of one bot account for one process (`owner`: unique per start)."""

    def __init__(
        self,
        db: Database,
        account: str,
        owner: str,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(db, f"matrix:{account}", owner, channel="matrix", clock=clock)
        self.account = account

    async def take(self, messages: Sequence[tuple[str, Message]], token: str) -> list[int]:
        """Store the batch's messages to answer (chat, message) and its sync token in ONE
        transaction; each message's row number. Raises
        `StorageError` when it could not be written (then nothing was)."""
        unit = partial(
            _taken, self.source, self.owner, self.account, messages, token, self._now_ms()
        )
        return await self.db.atomic(unit)

    async def recover(self) -> list[Kept]:
        """Take over what earlier processes left unanswered, oldest first (one whose
        answer waits in the outbox counts as answered: `InboxMarks.left_open`). Taking
        a row counts no try: `started` does, as its handling begins."""
        rows = await self.left_open("update_id, payload, tries")
        kept = (_kept(int(u), str(p), int(t)) for u, p, t in rows)
        return sorted(kept, key=lambda k: k.update_id)

    async def started(self, update_id: int) -> None:
        """A kept row's handling begins: one try more, on disk before the model is asked
        (a kill while it is handled then counts)."""
        await self.db.execute(
            "UPDATE channel_inbox SET tries = tries + 1 WHERE source = ? AND update_id = ?",
            (self.source, update_id),
        )


def _kept(update_id: int, payload: str, tries: int) -> Kept:
    try:
        return Kept(update_id, message_of(json.loads(payload)), tries)
    except (TypeError, KeyError, ValueError):
        return Kept(update_id, None, tries)
