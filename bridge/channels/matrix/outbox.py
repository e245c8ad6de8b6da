"""`deliver` for outbox entries of channel `matrix` (reminders, jobs, `roost send`).

A direct chat (a user id) goes to the direct room the person last wrote in
(`store.MatrixStore.direct`), and only while that room is still private
and theirs: before each delivery the homeserver is asked its members (at
most two) and its history visibility and join rule (`events.private`); a
room that fails is forgotten and the entry is a dead letter, as the
channel would leave it. A group chat (`<room>|<user>`) goes to its room.
No known room, or a room the bot is no longer in, is permanent (dead
letter); 429 and 5xx are retried by the scheduler (once per attempt here,
with the server's wait as the floor); a refused token waits for the
operator.
"""

from __future__ import annotations

from bridge.channels.matrix.api import MatrixError
from bridge.channels.matrix.events import private
from bridge.channels.matrix.platform import ROOM_ID, SEP, USER_ID
from bridge.channels.matrix.render import contents
from bridge.channels.matrix.send import Outgoing, txn
from bridge.channels.matrix.store import MatrixStore
from bridge.schedule.outbox import DeliveryError, OutboxEntry


def classify(exc: MatrixError) -> DeliveryError:
    """The outbox's view of a failed call."""
    wait_ms = exc.retry_after_ms or 0
    if exc.status == 429 or exc.errcode == "M_LIMIT_EXCEEDED":
        return DeliveryError("rate_limited", retry_after_ms=wait_ms)
    if exc.retryable:
        return DeliveryError("network", retry_after_ms=wait_ms)
    if exc.status == 401 or exc.errcode == "M_UNKNOWN_TOKEN":
        return DeliveryError("forbidden")
    if exc.status in (403, 404):  # not in the room (any more)
        return DeliveryError("not_found", permanent=True)
    if exc.status == 400:
        return DeliveryError("rejected", permanent=True)
    return DeliveryError("unknown")


class MatrixOutbox:
    def __init__(self, out: Outgoing, store: MatrixStore) -> None:
        self._out, self._store = out, store
        self._once = out.client.backoff.once()

    async def room_of(self, chat: str) -> str | None:
        room, sep, user = chat.rpartition(SEP)
        if sep:
            return room if ROOM_ID.fullmatch(room) and USER_ID.fullmatch(user) else None
        return await self._store.direct(chat) if USER_ID.fullmatch(chat) else None

    async def __call__(self, entry: OutboxEntry) -> None:
        room = await self.room_of(entry.chat)
        if room is None:
            raise DeliveryError("not_found", permanent=True)
        try:
            if SEP not in entry.chat and not await self._private(room):
                await self._store.forget_room(room)
                raise DeliveryError("not_found", permanent=True)
            for content in contents(entry.text):
                path_txn = f"outbox{entry.id}-{len(content['body'])}-{txn()}"
                await self._out.client.send(room, content, path_txn)
        except MatrixError as exc:
            raise classify(exc) from exc

    async def _private(self, room: str) -> bool:
        """Whether a direct room is still one of two with private history and entry."""
        client = self._out.client
        return await client.present(room) <= 2 and private(await client.access(room))
