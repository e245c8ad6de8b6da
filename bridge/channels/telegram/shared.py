"""Instances that share one bot: any one stores an update, the holder of the chat's lease answers.

With `[database] url` on PostgreSQL and Telegram in webhook mode, every
instance serves the one webhook URL (a load balancer spreads the updates);
in polling mode the one instance holding the poll lease polls
(`received_payload`). `received` stores an update durably
(`UpdateInbox.store`, de-duplicated by its `update_id`, owned by nobody:
`new`) BEFORE the route answers 200, and then NOTIFYs `TOPIC`, which wakes
every instance; the rest (per chat, under the chat's lease, oldest first,
given up after `MAX_TRIES`, the stop) is the platform-free
`bridge.channels.common.shared`, which WhatsApp uses too.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from bridge.channels.common import shared
from bridge.channels.common.shared import MAX_TRIES, Answer, Resend
from bridge.channels.telegram.inbox import UpdateInbox, updates_in
from bridge.storage.leases import Leases

TOPIC: Final = "telegram_inbox"

__all__ = ["MAX_TRIES", "TOPIC", "SharedWork"]


class SharedWork(shared.SharedWork):
    """This instance's part of one bot's work (the inbox's `owner`: unique per start)."""

    def __init__(
        self,
        inbox: UpdateInbox,
        leases: Leases,
        ttl_ms: int,
        answer: Answer,
        give_up: Answer,
        *,
        unmarked: set[int] | None = None,
        max_tries: int = MAX_TRIES,
        resend: Resend | None = None,
    ) -> None:
        super().__init__(
            inbox,
            leases,
            ttl_ms,
            answer,
            give_up,
            topic=TOPIC,
            unmarked=unmarked,
            max_tries=max_tries,
            resend=resend,
        )
        self.updates = inbox

    async def received(self, updates: Iterable[dict[str, Any]]) -> None:
        """Store updates (committed when this returns; StorageError: not stored) and wake
        every instance."""
        if await self.updates.store(updates, taken=False):
            await self.wake()

    async def received_payload(self, body: dict[str, Any]) -> None:
        """A `getUpdates` answer's parsed body (the poll lease's holder): its updates
        stored and woken for, before the next poll confirms them."""
        await self.received(updates_in(body))
