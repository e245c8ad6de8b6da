"""Updates through the durable inbox: claimed, answered in each chat's order, settled.

`Durable` stands between python-telegram-bot and the channel's `dispatch`:
- `fresh(update)`: an update the library hands over (already stored by the
  inbox's hook on `getUpdates`, or by the webhook route) is taken when this
  process stored it, so one that is answered or being answered is skipped (a
  redelivery, also after a restart); it waits while the replay of its chat
  runs, so a chat's messages keep their order;
- `replay()`: at start, what earlier processes left unanswered, grouped by
  chat; each chat's updates in order, the chats concurrently, once the
  channel is up (`up`: its commands and webhook set, so the replay's sends
  never hold the pooled connections those calls wait for);
- each update is marked `done` the moment its answer's text was delivered
  or kept in the outbox (`Outcome.settle`, before files or a voice message
  follow; a message that gets no answer, like a stranger's after the one
  refusal, is settled when its dispatch ends), or when answering it failed
  for a reason a retry would not fix; cancelled (roost stopping) or
  undeliverable with no outbox before it settled, it stays for the next
  start. A message the person sent more than `max_age_s` ago is not
  answered: `drop` tells them (through the outbox; a draft an earlier process
  showed of its answer loses its Stop button) and it is marked dropped.
  A mark that cannot be written (the database is away) is logged: the update
  stays open and the next start answers it again.
- an update an earlier process left open whose turn the session already
  stored (killed between the turn's end and the done mark: its answer was
  going out or went out) is not asked of the model again: its stored answer
  is sent again in the chat's order, as an answer is (`resend`: the messages
  a draft of it was shown in edited into it, the outbox when it fails), so
  the turn is never stored twice. An answer
  whose sendMessage was on its way when the process died may so reach the
  person twice, the same text (Telegram cannot tell whether it arrived; the
  person never goes without it); a streamed one is edited, not sent again.
- a streamed answer's draft records the messages it is shown in
  (`Outcome.drafted`, `UpdateInbox.showing`); the process that answers the
  update after a kill (or a stop) is handed them (`Outcome.shown`) and edits
  them into its answer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from telegram import Bot, Update

from bridge.channels.telegram.inbox import Stored, UpdateInbox, updates_in
from bridge.core.words import count
from bridge.storage.errors import StorageError

log = logging.getLogger("bridge.channels.telegram.channel")
PRUNE_EVERY_S = 3600.0


async def _nothing() -> None:
    return None


@dataclass
class Outcome:
    """Told by the dispatch when the answer reached the person or the outbox (`settle`):
    the inbox marks the update answered at that moment, before files or a voice
    message follow, so a crash after it never answers the message twice."""

    done: Callable[[], Awaitable[None]] = _nothing
    settled: bool = False
    # the messages an earlier process showed a draft of this answer in (edited into it)
    shown: tuple[int, ...] = ()
    # told the messages a draft of the answer is shown in (recorded for the next process)
    drafted: Callable[[list[int]], Awaitable[None]] | None = None

    async def settle(self) -> None:
        if not self.settled:
            self.settled = True
            await self.done()


Dispatch = Callable[[Update, Outcome], Awaitable[None]]
# (update, age in s, the messages an earlier process showed a draft in): tell the person
Drop = Callable[[Update, float, tuple[int, ...]], Awaitable[None]]
# (update, its stored answer, the messages a draft was shown in): sent again; delivered/kept?
Resend = Callable[[Update, str, tuple[int, ...]], Awaitable[bool]]


def too_old(update: Update, age_s: float) -> str:
    """The line for a message roost got too late to answer."""
    message = update.message
    when = message.date.astimezone(UTC) if message is not None else datetime.now(UTC)
    hours = max(1, round(age_s / 3600))
    return (
        f"⌛ Your message of {when:%a %d %b %H:%M} UTC reached me {hours} h later, too late "
        "to answer it now. Please send it again if it still matters."
    )


def sent_at(update: Update) -> float | None:
    """When the person sent a message (epoch seconds); None for other updates."""
    message = update.message
    return message.date.timestamp() if message is not None else None


class Durable:
    def __init__(
        self,
        inbox: UpdateInbox,
        dispatch: Dispatch,
        drop: Drop,
        max_age_s: float,
        clock: Callable[[], float] = time.time,
        resend: Resend | None = None,
    ) -> None:
        self.inbox = inbox
        self._dispatch, self._drop, self._resend = dispatch, drop, resend
        self._max_age_s, self._clock = max_age_s, clock
        self._replaying: dict[str, asyncio.Task[None]] = {}
        self.replayed = False
        self._pruned_at = 0.0
        self.unmarked: set[int] = set()  # answered, the mark not written (database away)
        # set once the channel is up (commands and webhook set): what the replay sends
        # never takes the connections those calls wait for
        self.up = asyncio.Event()

    async def received(self, body: dict[str, Any]) -> None:
        """`getUpdates` answered (its parsed body): commit its updates before the next
        poll confirms them."""
        await self.inbox.store(updates_in(body))

    async def _tidy(self) -> None:
        """Now and then, forget updates answered long ago."""
        now = time.monotonic()
        if now - self._pruned_at > PRUNE_EVERY_S:
            self._pruned_at = now
            try:
                await self.inbox.prune()
            except StorageError as exc:  # the next hour tries again
                log.warning("telegram: answered updates could not be pruned: %s", exc)

    async def _mark(self, update_id: int, *, dropped: bool = False) -> None:
        """Mark an update answered (or dropped); a failure is logged, not raised: the
        answer went out, and the update stays open (the next start answers it again)."""
        try:
            await self.inbox.done(update_id, dropped=dropped)
        except StorageError as exc:
            log.error("telegram: update %d could not be marked answered: %s", update_id, exc)
            self.unmarked.add(update_id)

    async def flush(self) -> None:
        """At stop: write the marks that failed before (logged when it still cannot)."""
        try:
            await self.inbox.flush()
        except StorageError as exc:
            log.error("telegram: %d answered update(s) could not be marked: %s",
                      self.inbox.unwritten, exc)  # fmt: skip

    async def fresh(self, update: Update, chat: str) -> None:
        await self._tidy()
        if not self.inbox.take(update.update_id):
            log.debug("telegram: update %d is answered or being answered", update.update_id)
            return
        before = self._replaying.get(chat)
        if before is not None:
            await asyncio.wait({before})  # the chat's earlier messages go first
        await self.answer(update)

    async def replay(
        self, bot: Bot, spawn: Callable[[Coroutine[Any, Any, None]], asyncio.Task[None]]
    ) -> int:
        """Start answering what earlier processes left (once); returns how many. Raises
        `StorageError` when they could not be read (the caller tries again)."""
        if self.replayed:
            return 0
        rows = await self.inbox.recover()
        self.replayed = True
        chats: dict[str, list[Stored]] = {}
        for row in rows:
            chats.setdefault(row.chat, []).append(row)
        for chat, stored in chats.items():
            self._replaying[chat] = spawn(self._replay_chat(bot, chat, stored))
        if rows:
            said = count(len(rows), "message")
            log.info("telegram: answering %s left from before the restart", said)
        return len(rows)

    async def _replay_chat(self, bot: Bot, chat: str, stored: list[Stored]) -> None:
        try:
            await self.up.wait()  # the channel's own start calls first
            for row in stored:
                try:
                    update = Update.de_json(row.payload, bot)
                except (ValueError, TypeError, KeyError):
                    log.warning("telegram: stored update %d is unreadable; dropped", row.update_id)
                    await self._mark(row.update_id, dropped=True)
                    continue
                if await self._answered_before(update, row):
                    continue
                try:
                    await self.answer(update, row.shown)
                except Exception:  # marked done; the chat's next messages still go
                    log.exception("telegram: answering stored update %d failed", row.update_id)
        finally:
            if self._replaying.get(chat) is asyncio.current_task():
                del self._replaying[chat]

    async def _answered_before(self, update: Update, row: Stored) -> bool:
        """Whether the session already holds the update's turn (stored, then the process
        died before the done mark): its stored answer is sent again (delivered or kept in
        the outbox) and the update is marked done. False (answered as usual) when no turn
        was stored, or its answer was neither delivered nor kept."""
        if self._resend is None:
            return False
        try:
            stored = await self.inbox.stored_answer(row.chat, row.msg)
        except StorageError as exc:
            log.warning(
                "telegram: update %d's stored turn could not be read: %s", row.update_id, exc
            )
            return False
        if stored is None or not await self._resend(update, stored, row.shown):
            return False
        log.info("telegram: update %d was answered before the restart; its answer is resent "
                 "from the session", row.update_id)  # fmt: skip
        await self._mark(row.update_id)
        return True

    async def _drafted(self, update_id: int, message_ids: list[int]) -> None:
        """Record the messages a draft of the update's answer is shown in; a failure is
        logged, not raised (the answer goes on; after a kill the draft stays as it was)."""
        try:
            await self.inbox.showing(update_id, message_ids)
        except StorageError as exc:
            log.warning("telegram: update %d's draft could not be recorded: %s", update_id, exc)

    async def answer(self, update: Update, shown: tuple[int, ...] = ()) -> None:
        """Answer one taken update (or drop it when too old); marked once settled.
        `shown`: the messages an earlier process showed a draft of its answer in."""
        sent = sent_at(update)
        age = self._clock() - sent if sent is not None else 0.0
        if age > self._max_age_s:
            log.info("telegram: update %d is %.0fs old; dropped", update.update_id, age)
            try:
                await self._drop(update, age, shown)
            finally:
                await self._mark(update.update_id, dropped=True)
            return
        uid = update.update_id
        outcome = Outcome(lambda: self._mark(uid), shown=shown, drafted=partial(self._drafted, uid))
        try:  # cancelled before it settled (roost stopping): left for the next start
            await self._dispatch(update, outcome)
        except Exception:
            await outcome.settle()  # a retry would fail the same way
            raise
