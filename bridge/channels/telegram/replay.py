"""Updates through the durable inbox: claimed, answered in each chat's order, settled.

`Durable` stands between python-telegram-bot and the channel's `dispatch`:
- `fresh(update)`: an update the library hands over (already stored by the
  inbox's hook on `getUpdates`, or by the webhook route) is claimed, so one
  that is answered or being answered is skipped (a redelivery after a
  restart); it waits while the replay of its chat runs, so a chat's
  messages keep their order;
- `replay()`: at start, what earlier processes left unanswered, grouped by
  chat; each chat's updates in order, the chats concurrently;
- each update is marked `done` the moment its answer's text was delivered
  or kept in the outbox (`Outcome.settle`, before files or a voice message
  follow; a message that gets no answer, like a stranger's after the one
  refusal, is settled when its dispatch ends), or when answering it failed
  for a reason a retry would not fix; cancelled (roost stopping) or
  undeliverable with no outbox before it settled, it stays for the next
  start. A message the person sent more than `max_age_s` ago is not
  answered: `drop` tells them (through the outbox) and it is marked dropped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from telegram import Bot, Update

from bridge.channels.telegram.inbox import Stored, UpdateInbox, updates_in

log = logging.getLogger("bridge.channels.telegram.channel")
PRUNE_EVERY_S = 3600.0


def _nothing() -> None:
    return None


@dataclass
class Outcome:
    """Told by the dispatch when the answer reached the person or the outbox (`settle`):
    the inbox marks the update answered at that moment, before files or a voice
    message follow, so a crash after it never answers the message twice."""

    done: Callable[[], None] = _nothing
    settled: bool = False

    def settle(self) -> None:
        if not self.settled:
            self.settled = True
            self.done()


Dispatch = Callable[[Update, Outcome], Awaitable[None]]
Drop = Callable[[Update, float], Awaitable[None]]  # (update, age in s): tell the person


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
    ) -> None:
        self.inbox = inbox
        self._dispatch, self._drop = dispatch, drop
        self._max_age_s, self._clock = max_age_s, clock
        self._replaying: dict[str, asyncio.Task[None]] = {}
        self.replayed = False
        self._pruned_at = 0.0

    def received(self, payload: bytes) -> None:
        """`getUpdates` answered: commit its updates before the next poll confirms them."""
        self.inbox.store(updates_in(payload))

    def _tidy(self) -> None:
        """Now and then, forget updates answered long ago."""
        now = time.monotonic()
        if now - self._pruned_at > PRUNE_EVERY_S:
            self._pruned_at = now
            self.inbox.prune()

    async def fresh(self, update: Update, chat: str) -> None:
        self._tidy()
        if not self.inbox.claim(update.update_id):
            log.debug("telegram: update %d is answered or being answered", update.update_id)
            return
        before = self._replaying.get(chat)
        if before is not None:
            await asyncio.wait({before})  # the chat's earlier messages go first
        await self._answer(update)

    def replay(
        self, bot: Bot, spawn: Callable[[Coroutine[Any, Any, None]], asyncio.Task[None]]
    ) -> int:
        """Start answering what earlier processes left (once); returns how many."""
        if self.replayed:
            return 0
        self.replayed = True
        rows = self.inbox.recover()
        chats: dict[str, list[Stored]] = {}
        for row in rows:
            chats.setdefault(row.chat, []).append(row)
        for chat, stored in chats.items():
            self._replaying[chat] = spawn(self._replay_chat(bot, chat, stored))
        if rows:
            log.info("telegram: answering %d messages left from before the restart", len(rows))
        return len(rows)

    async def _replay_chat(self, bot: Bot, chat: str, stored: list[Stored]) -> None:
        try:
            for row in stored:
                try:
                    update = Update.de_json(row.payload, bot)
                except (ValueError, TypeError, KeyError):
                    log.warning("telegram: stored update %d is unreadable; dropped", row.update_id)
                    self.inbox.done(row.update_id, dropped=True)
                    continue
                try:
                    await self._answer(update)
                except Exception:  # marked done; the chat's next messages still go
                    log.exception("telegram: answering stored update %d failed", row.update_id)
        finally:
            if self._replaying.get(chat) is asyncio.current_task():
                del self._replaying[chat]

    async def _answer(self, update: Update) -> None:
        sent = sent_at(update)
        age = self._clock() - sent if sent is not None else 0.0
        if age > self._max_age_s:
            log.info("telegram: update %d is %.0fs old; dropped", update.update_id, age)
            try:
                await self._drop(update, age)
            finally:
                self.inbox.done(update.update_id, dropped=True)
            return
        uid = update.update_id
        outcome = Outcome(lambda: self.inbox.done(uid))
        try:  # cancelled before it settled (roost stopping): left for the next start
            await self._dispatch(update, outcome)
        except Exception:
            outcome.settle()  # a retry would fail the same way
            raise
