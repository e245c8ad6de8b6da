"""Conversations, persisted in SQLite and bounded by a character budget.

A session is keyed by (tenant, channel, chat). Each turn stores the person's
message, the tool-call steps the agent took (cut, see `bridge.core.history`)
and the final answer. When the stored characters pass the budget, the
oldest whole turns are folded into a model-written summary that opens the
history (`bridge.core.compactor` asks for it after the reply; this store
plans the fold and applies it); when no summary can be had they are dropped
and counted instead. A session that grows past twice its budget (summaries
not keeping up) drops its oldest turns at once. A session idle longer than
the idle limit starts fresh on its next message; `/reset` clears it, summary
and all. A cleared conversation stays readable: `archive`
(`bridge.core.conversations`) keeps it in the same unit. The clock is
passed in, so expiry is testable without waiting.

The store is a way out of roost: it takes only text that passed the
tenant's masker (`Masked`, `bridge.types.masked`; checked on every write,
the message, each tool step's text and arguments, the answer, a summary),
so the archive, the history page, exports and any index fed from it hold
masked text by construction. An index of what was said (recall) hooks in
with `subscribe`: after each stored turn it gets the turn's messages, every
text in them `Masked`.

Histories of recently used chats are cached in memory; the cache entry is
used only while the stored row (turns, dropped, summarised) still matches,
so another process writing the same database (`roost send`, another
instance) is seen at once.

The store runs on the `Database` protocol (`bridge.storage`, SQLite or
PostgreSQL). A turn costs it two statements: `load` is ONE SELECT (the row,
joined to the messages only when the cached copy's stamp no longer matches,
so a cache hit reads one row), and `append` is ONE unit (`Database.atomic`:
the row counted up by an upsert that returns it, the turn's messages, and a
hard drop when one is due, and what the caller adds: a turn's usage count and
turn-log row, `also`), which SQLite runs as one job on its writer (no
transaction held across an await while roost.db has a second way in,
docs/scaling.md). Two instances appending to one session are serialised by
the row's upsert (PostgreSQL's row lock, SQLite's one writer): each gets its
own turn number, nothing is lost. A clear (reset, idle expiry) archives and
deletes in one unit; a fold is planned in one and applied in one, which
checks that the folded rows are still as planned (their statements:
`bridge.core.session_units`).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

from bridge.core import session_units as sql
from bridge.core.compaction import Fold, summary_message
from bridge.core.conversations import ConversationArchive
from bridge.core.history import require_masked, well_formed
from bridge.core.session_units import SessionRow
from bridge.storage.protocol import Database
from bridge.storage.units import Made, together
from bridge.types.backend import ChatMessage
from bridge.types.masked import Masked, require

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SessionKey:
    tenant: str
    channel: str
    chat: str


Stored = Callable[["SessionKey", tuple[ChatMessage, ...]], None]
"""Told each stored turn (an index of what was said); every text in it is `Masked`."""


@dataclass(frozen=True, slots=True)
class Session:
    key: SessionKey
    history: tuple[ChatMessage, ...]  # the summary message first, when there is one
    started_at: float
    updated_at: float
    turns: int  # turns ever stored in this conversation
    dropped: int  # turns dropped to stay inside the budget
    chars: int  # characters currently stored (turns and summary)
    expired: bool = False  # the previous conversation was idle too long
    summary: str = ""  # the model-written summary of folded turns ('' when none)
    summarised: int = 0  # how many turns the summary covers

    @property
    def kept(self) -> int:
        """Turns kept message by message."""
        return self.turns - self.dropped - self.summarised

    def last_exchange(self) -> tuple[ChatMessage, ChatMessage] | None:
        """The newest kept turn's message and final answer (its tool steps skipped)."""
        if self.kept < 1 or not self.history or self.history[-1].role != "assistant":
            return None
        for message in reversed(self.history):
            if message.role == "user":
                return message, self.history[-1]
        return None


class _Cached(NamedTuple):
    """A remembered history, valid while the stored row shows the same stamp."""

    stamp: tuple[float, int, int, int]
    history: tuple[ChatMessage, ...]


class SessionStore:
    def __init__(
        self,
        db: Database,
        budget_chars: int,
        idle_s: float,
        archive: ConversationArchive,
        cache_size: int = 256,
    ) -> None:
        self._db = db
        self.archive = archive
        self.budget_chars = budget_chars
        self.idle_s = idle_s
        self._cache: OrderedDict[SessionKey, _Cached] = OrderedDict()
        self._cache_size = cache_size
        self._listeners: list[Stored] = []
        # key -> the session's size as the last append left it, taken (once) by
        # `over_budget` right after, so the compactor's check reads no row
        self._appended: dict[SessionKey, int] = {}

    def subscribe(self, listener: Stored) -> None:
        """`listener(key, messages)` after each stored turn (masked texts only)."""
        self._listeners.append(listener)

    async def load(self, key: SessionKey, now: float) -> Session:
        """The current conversation; starts a fresh one if none or idle too long."""
        cached = self._cache.get(key)
        stamp = cached.stamp if cached is not None else sql.NO_STAMP
        rows = await self._db.fetch_all(sql.LOAD, (*stamp, sql.NEWEST, *sql.args(key)))
        if not rows:
            return Session(key, (), now, now, 0, 0, 0)
        row = SessionRow(*rows[0][:7])
        if now - row.updated_at > self.idle_s:
            await self._clear(key, now)
            return Session(key, (), now, now, 0, 0, 0, expired=True)
        if cached is not None and cached.stamp == row.stamp:
            self._cache.move_to_end(key)
            history = cached.history
        else:
            stored = tuple(sql.message_of(r[7:]) for r in rows if r[7] is not None)
            opening = (summary_message(row.summary),) if row.summary else ()
            history = opening + well_formed(stored)
            self._remember(key, _Cached(row.stamp, history))
        return Session(
            key,
            history,
            row.started_at,
            row.updated_at,
            row.turns,
            row.dropped,
            row.total,
            False,
            row.summary,
            row.summarised,
        )

    def _remember(self, key: SessionKey, cached: _Cached) -> None:
        self._cache[key] = cached
        self._cache.move_to_end(key)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    async def append(
        self,
        key: SessionKey,
        user: Masked,
        answer: Masked,
        msg_id: str,
        now: float,
        steps: Sequence[ChatMessage] = (),
        sent: Masked | None = None,
        also: Sequence[Made[Any]] = (),
    ) -> tuple[ChatMessage, ...]:
        """Store one turn: the message, its tool-call steps (in order) and the answer,
        every text of them masked (`Unmasked` otherwise, before anything is written);
        `sent`: what the person sent, when it differs from `user` (`bridge.core.shown`);
        `also`: units of other stores committed in the same transaction (a turn's end:
        its usage count, its turn-log row), or none of them with the turn. Returns the
        turn's messages as stored: the very objects the cached history hands out next."""
        turn_messages = (ChatMessage("user", user), *steps, ChatMessage("assistant", answer))
        require_masked(turn_messages, "the session store")
        meta = "" if sent is None else require(sent, "the session store")
        cached = self._cache.pop(key, None)
        # the function that makes the unit: SQLite may run it inline (and make it again)
        unit = partial(sql.appended, key, turn_messages, msg_id, now, meta, self.budget_chars)
        grown, over = await self._db.atomic(together(unit, *also) if also else unit)
        if over:
            self._appended.pop(key, None)
        else:
            self._appended[key] = grown.total
            stamp = grown.stamp
            before = (stamp[0], stamp[1] - 1, stamp[2], stamp[3])  # the row before this turn
            if cached is not None and cached.stamp == before:
                self._remember(key, _Cached(stamp, cached.history + turn_messages))
        for listener in self._listeners:
            try:
                listener(key, turn_messages)
            except Exception:  # the turn is stored; an index that failed catches up itself
                log.exception("a listener of stored turns failed")
        return turn_messages

    async def failed(
        self, key: SessionKey, user: Masked, sent: Masked, told: Masked, now: float
    ) -> None:
        """Keep a turn the model failed for the page's history (never for a prompt):
        the person's message and what they were told (`bridge.core.turn_failures`),
        all masked (`Unmasked` otherwise)."""
        for text in (user, sent, told):
            require(text, "the failed-turn store")
        conversation = await self.archive.current(key, now)
        await self.archive.shown.failures.record(key, conversation, user, sent, told, now)

    def forget(self, key: SessionKey) -> None:
        """Drop the cached history of `key`: its rows were changed outside this store
        (`bridge.core.versions`)."""
        self._cache.pop(key, None)
        self._appended.pop(key, None)

    async def over_budget(self, key: SessionKey) -> bool:
        """Whether the session is over its budget. Right after `append` of the same key this
        is the size that append wrote (no read): only appends grow a session, and they are
        serialised per chat, so a "no" is exact; a "yes" that a fold or reset made stale
        meanwhile only starts a summary whose `fold_plan` reads the row and finds nothing."""
        known = self.appended_over(key)
        if known is not None:
            return known
        row = await self._row(key)
        return row is not None and row.total > self.budget_chars

    def appended_over(self, key: SessionKey) -> bool | None:
        """`over_budget` from the size the last append of `key` wrote (taken once), or
        None when there is none to go by (a read is needed)."""
        total = self._appended.pop(key, None)
        return None if total is None else total > self.budget_chars

    async def fold_plan(self, key: SessionKey) -> Fold | None:
        """What to fold now (a snapshot), or None when the session is within its budget."""
        return await self._db.atomic(sql.planned(key, self.budget_chars))

    async def fold(self, key: SessionKey, fold: Fold, summary: Masked) -> int | None:
        """Replace the planned turns by `summary`; the chars after, or None if the session moved."""
        return await self._apply(key, fold, require(summary, "a session summary"))

    async def drop(self, key: SessionKey, fold: Fold) -> int | None:
        """The fallback: drop the planned turns (counted); the chars after, or None if moved."""
        return await self._apply(key, fold, None)

    async def _apply(self, key: SessionKey, fold: Fold, summary: str | None) -> int | None:
        self._cache.pop(key, None)
        self._appended.pop(key, None)
        lock = self._db.dialect.for_update
        return await self._db.atomic(sql.applied(key, fold, summary, lock))

    async def reset(self, key: SessionKey, now: float) -> None:
        """Start a new conversation; the old one is archived, readable but not in any prompt
        (memory, tools and style are elsewhere)."""
        await self._clear(key, now)

    async def _row(self, key: SessionKey) -> SessionRow | None:
        found = await self._db.fetch_one(
            f"SELECT {sql.COLUMNS} FROM sessions WHERE {sql.KEY}", sql.args(key)
        )
        return None if found is None else SessionRow(*found)

    async def _clear(self, key: SessionKey, now: float) -> None:
        self._cache.pop(key, None)
        self._appended.pop(key, None)
        await self.archive.archive(key, now, then=sql.cleared(key))
