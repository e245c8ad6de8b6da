"""A durable inbox's marks: an update answered (`done`) or given up (`dropped`), group-committed.

The part of a channel's durable inbox (table `channel_inbox`, one `source`
per bot, WhatsApp number or Matrix account) that knows nothing of the
platform: marking updates, taking over what an earlier process left open
(`left_open`), counting the open ones, pruning the old ones. Telegram's
`UpdateInbox`, WhatsApp's `WhatsAppInbox` and Matrix's `MatrixInbox` add
how their updates are stored. `done` returns once the mark is committed; marks asked for in the
same moment, or while one is being written, go together (a group commit:
one UPDATE for all the chats' answers of that moment). The first caller of
a moment writes the batch itself, after one turn of the event loop for the
others to join, and a task writes what came meanwhile: a lone mark (one
chat's answer) makes no task and waits on no future of its own. A marked
row keeps only its ids (the payload is dropped at once) and is pruned after
`KEEP_MS`. A mark whose write failed (the database away, a full disk) is kept
(in memory, at most `KEPT_MARKS`) and written with the next batch, or by
`flush` at stop: an answer delivered while the database was away is not
answered again at the next start because its mark was lost with the moment.
`stored_answer` tells recovery whether the session already holds a message's
exchange (the turn ran to its end before the process died): then the stored
answer is delivered, the model is not asked again and the turn is not stored
twice.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any, Final

from bridge.storage.protocol import Database

KEEP_MS: Final = 3 * 86_400_000  # platforms redeliver for at most a day; ids are kept longer
KEPT_MARKS: Final = 100_000  # failed marks kept for the next write (ids: a few MB at most)


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
        self._writing = False  # a caller or `_marking` is writing marks now
        self._marking: asyncio.Task[None] | None = None  # the task writing later marks
        self._failed: dict[int, str] = {}  # marks whose write failed: written with the next

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    async def done(self, update_id: int, *, dropped: bool = False) -> None:
        """The update is answered (its answer delivered or kept), or dropped; returns once
        that is committed (group-committed with the marks of the same moment). Raises
        `StorageError` when it could not be written."""
        mark = asyncio.get_running_loop().create_future()
        self._marks.append((update_id, "dropped" if dropped else "done", mark))
        if self._writing:  # a writer is on it: this mark goes in its next batch
            await mark
            return
        self._writing = True  # this caller writes the moment's marks itself
        batch: list[tuple[int, str, asyncio.Future[None]]] = []
        try:
            await asyncio.sleep(0)  # the marks asked for in the same moment join
            batch, self._marks = self._marks, []
            await self._write(batch)
        except asyncio.CancelledError:  # the marks are written all the same, by a task
            self._marks = [m for m in batch if not m[2].done()] + self._marks
            raise
        finally:
            self._writing = False
            if self._marks:  # asked for meanwhile
                self._writing = True
                self._marking = asyncio.create_task(
                    self._write_marks(), name=f"{self.channel}-inbox-done"
                )
        mark.result()  # this caller's own mark: raises what its write raised

    async def _write_marks(self) -> None:
        try:
            while self._marks:
                batch, self._marks = self._marks, []
                await self._write(batch)
        finally:
            self._writing = False

    async def _write(self, batch: list[tuple[int, str, asyncio.Future[None]]]) -> None:
        """Commit one batch of marks (one UPDATE per state) and settle each mark's future:
        its result, or the write's exception (each waiting caller hears it)."""
        states = dict(self._failed)  # marks that failed before go with this batch
        states.update((uid, state) for uid, state, _ in batch)
        try:
            await self._write_states(states)
        except asyncio.CancelledError:
            if asyncio.current_task() is self._marking:  # the loop is closing: nobody waits
                for _, _, mark in batch + self._marks:  # in vain
                    mark.cancel()
            raise
        except Exception as exc:
            self._keep_failed(states)
            for _, _, mark in batch:
                if not mark.done():
                    mark.set_exception(exc)
            return
        for _, _, mark in batch:
            if not mark.done():  # a caller cancelled meanwhile: written all the same
                mark.set_result(None)

    async def _write_states(self, states: dict[int, str]) -> None:
        """One UPDATE per state; the failed marks among `states` are forgotten once written."""
        for state in ("done", "dropped"):
            ids = [uid for uid, s in states.items() if s == state]
            if ids:
                await self._mark_all(ids, state)
        for uid in states:
            self._failed.pop(uid, None)

    def _keep_failed(self, states: dict[int, str]) -> None:
        """Keep marks whose write failed for the next write (the oldest go past the cap)."""
        self._failed.update(states)
        while len(self._failed) > KEPT_MARKS:
            del self._failed[next(iter(self._failed))]

    @property
    def unwritten(self) -> int:
        """Marks whose write failed and that are kept for the next write."""
        return len(self._failed)

    async def flush(self) -> None:
        """Write the marks that failed before (at stop); raises `StorageError` when the
        database is still away (then they are lost with the process: the next start
        finds those rows open, see `stored_answer`)."""
        if self._failed and not self._writing:
            await self._write_states(dict(self._failed))

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

    async def left_open(self, columns: str) -> list[Any]:
        """Take over what earlier processes (other owners) left unanswered: each row
        whose answer already waits in the outbox (`reply:<msg>` for its chat) is marked
        done, the others are claimed (state `working`, this process their owner; on
        PostgreSQL skipping rows another transaction holds); the claimed rows'
        `columns`, in no order. Two statements."""
        now, db = self._now_ms(), self.db
        await db.execute(  # answered already: the answer waits in the outbox
            "UPDATE channel_inbox SET state = 'done', payload = '', done_ms = ?"
            " WHERE source = ? AND state IN ('new', 'working') AND owner != ? AND msg != ''"
            " AND EXISTS (SELECT 1 FROM outbox AS o WHERE o.channel = ?"
            " AND o.chat = channel_inbox.chat AND o.key = 'reply:' || channel_inbox.msg)",
            (now, self.source, self.owner, self.channel),
        )
        rows = await db.fetch_all(
            "UPDATE channel_inbox SET state = 'working', owner = ?"
            " WHERE source = ? AND update_id IN (SELECT update_id FROM channel_inbox"
            " WHERE source = ? AND owner != ? AND state IN ('new', 'working')"
            f" {db.dialect.skip_locked}) RETURNING {columns}",
            (self.owner, self.source, self.source, self.owner),
        )
        return list(rows)

    async def stored_answer(self, chat: str, msg: str) -> str | None:
        """The answer the session stored for message `msg` of `chat` (this channel's
        session rows with that msg_id: the turn ran to its end, its answer was going
        out or went out), or None when no turn of it was stored. Asked only for rows an
        earlier process left open, so a process killed between the turn's end and the
        done mark neither asks the model again nor stores the turn twice."""
        if not msg:
            return None
        row = await self.db.fetch_one(
            "SELECT role, content FROM session_messages WHERE tenant IN"
            " (SELECT tenant FROM sessions WHERE channel = ? AND chat = ?)"
            " AND channel = ? AND chat = ? AND msg_id = ? ORDER BY id DESC LIMIT 1",
            (self.channel, chat, self.channel, chat, msg),
        )
        if row is None or row[0] != "assistant" or not str(row[1]).strip():
            return None
        return str(row[1])

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


def stored_json(value: object) -> str:
    """A row's payload: `value` as compact JSON. A lone surrogate (a `\\ud800` escape a
    platform passed on) is no valid Unicode and no database stores it; such a value is
    kept with every non-ASCII character escaped, which reads back as the same value
    (the core replaces the surrogate when the message reaches it, `bridge.core.router`)."""
    payload = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    try:
        payload.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":"))
    return payload


def message_ids(shown: object) -> tuple[int, ...]:
    """The message ids a stored `channel_inbox.shown` holds ("12,13"; '' when none)."""
    return tuple(int(m) for m in str(shown or "").split(",") if m.strip().isdigit())
