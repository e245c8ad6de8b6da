"""A durable inbox's marks: an update answered (`done`) or given up (`dropped`), group-committed.

The part of a channel's durable inbox (table `channel_inbox`, one `source`
per bot or WhatsApp number) that knows nothing of the platform: marking
updates, counting the open ones, pruning the old ones. Telegram's
`UpdateInbox` and WhatsApp's `WhatsAppInbox` add how their updates are
stored. `done` returns once the mark is committed; marks asked for while
one is being written go together in the next statement (a group commit:
one UPDATE for all the chats' answers of that moment); alone, a mark is
one statement at once. A marked row keeps only its ids (the payload is
dropped at once) and is pruned after `KEEP_MS`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Final

from bridge.storage.protocol import Database

KEEP_MS: Final = 3 * 86_400_000  # platforms redeliver for at most a day; ids are kept longer


class InboxMarks:
    """The marks of one source's inbox for one process (`owner`: unique per start)."""

    def __init__(
        self,
        db: Database,
        source: str,
        owner: str,
        *,
        channel: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db, self.source, self.owner = db, source, owner
        self.channel, self._clock = channel, clock
        self._marks: list[tuple[int, str, asyncio.Future[None]]] = []  # done, not written yet
        self._marking: asyncio.Task[None] | None = None  # writing marks now

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    async def done(self, update_id: int, *, dropped: bool = False) -> None:
        """The update is answered (its answer delivered or kept), or dropped; returns once
        that is committed (group-committed with the marks of the same moment). Raises
        `StorageError` when it could not be written."""
        mark = asyncio.get_running_loop().create_future()
        self._marks.append((update_id, "dropped" if dropped else "done", mark))
        if self._marking is None or self._marking.done():
            self._marking = asyncio.create_task(
                self._write_marks(), name=f"{self.channel}-inbox-done"
            )
        await mark

    async def _write_marks(self) -> None:
        while self._marks:
            batch, self._marks = self._marks, []
            try:
                for state in ("done", "dropped"):
                    ids = [uid for uid, s, _ in batch if s == state]
                    if ids:
                        await self._mark_all(ids, state)
            except asyncio.CancelledError:  # the loop is closing: nobody waits in vain
                for _, _, mark in batch + self._marks:
                    mark.cancel()
                raise
            except Exception as exc:  # each waiting caller hears it
                for _, _, mark in batch:
                    if not mark.done():
                        mark.set_exception(exc)
                continue
            for _, _, mark in batch:
                if not mark.done():  # a caller cancelled meanwhile: written all the same
                    mark.set_result(None)

    async def _mark_all(self, ids: list[int], state: str) -> None:
        """One UPDATE for `ids`; the list padded (with its last id) to a power of two so
        the statement's text has few shapes."""
        size = 1 << (len(ids) - 1).bit_length()
        padded = ids + ids[-1:] * (size - len(ids))
        await self.db.execute(
            "UPDATE channel_inbox SET state = ?, payload = '', done_ms = ?"
            f" WHERE source = ? AND update_id IN ({', '.join('?' * size)})",
            (state, self._now_ms(), self.source, *padded),
        )

    async def open_count(self) -> int:
        """Updates not answered yet (any owner)."""
        count = await self.db.fetch_value(
            "SELECT COUNT(*) FROM channel_inbox WHERE source = ? AND state IN ('new', 'working')",
            (self.source,),
        )
        return int(count)

    async def prune(self) -> int:
        """Forget answered and dropped updates past `KEEP_MS`."""
        return await self.db.execute(
            "DELETE FROM channel_inbox WHERE source = ? AND state IN ('done', 'dropped')"
            " AND done_ms < ?",
            (self.source, self._now_ms() - KEEP_MS),
        )
