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
(`bridge.core.conversations`) keeps it in the same transaction. The clock is
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
so another process writing the same database (`roost send`) is seen at once.
"""

from __future__ import annotations

import logging
import sqlite3
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NamedTuple

from bridge.core.compaction import (
    Fold,
    FoldPlan,
    TurnSize,
    plan_fold,
    summary_chars,
    summary_message,
)
from bridge.core.conversations import ConversationArchive
from bridge.core.history import (
    decode_calls,
    encode_calls,
    message_chars,
    require_masked,
    well_formed,
)
from bridge.types.backend import ChatMessage
from bridge.types.masked import Masked, require

log = logging.getLogger(__name__)
HARD_FACTOR = 2  # past this many budgets, drop at once instead of waiting for a summary
_SIZE = "LENGTH(content) + LENGTH(tool_calls)"  # message_chars, in SQL


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


class _Row(NamedTuple):
    """A `sessions` table row."""

    started_at: float
    updated_at: float
    turns: int
    dropped: int
    chars: int  # of the stored messages (the summary not included)
    summary: str
    summarised: int

    @property
    def stamp(self) -> tuple[float, int, int, int]:
        return (self.started_at, self.turns, self.dropped, self.summarised)

    @property
    def total(self) -> int:
        return self.chars + summary_chars(self.summary)


class _Cached(NamedTuple):
    """A remembered history, valid while the stored row shows the same stamp."""

    stamp: tuple[float, int, int, int]
    history: tuple[ChatMessage, ...]


class SessionStore:
    def __init__(
        self,
        conn: sqlite3.Connection,
        budget_chars: int,
        idle_s: float,
        cache_size: int = 256,
        archive: ConversationArchive | None = None,
    ) -> None:
        self._db = conn
        self.archive = archive or ConversationArchive(conn)
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

    def load(self, key: SessionKey, now: float) -> Session:
        """The current conversation; starts a fresh one if none or idle too long."""
        row = self._row(key)
        expired = False
        if row is not None and now - row.updated_at > self.idle_s:
            self._clear(key, now)
            row, expired = self._row(key), True
        if row is None:
            return Session(key, (), now, now, 0, 0, 0, expired)
        cached = self._cache.get(key)
        if cached is not None and cached.stamp == row.stamp:
            self._cache.move_to_end(key)
            history = cached.history
        else:
            opening = (summary_message(row.summary),) if row.summary else ()
            history = opening + well_formed(self._messages(key))
            self._remember(key, _Cached(row.stamp, history))
        return Session(
            key,
            history,
            row.started_at,
            row.updated_at,
            row.turns,
            row.dropped,
            row.total,
            expired,
            row.summary,
            row.summarised,
        )

    def _messages(self, key: SessionKey, through: int | None = None) -> tuple[ChatMessage, ...]:
        rows = self._db.execute(
            "SELECT role, content, tool_calls, tool_call_id FROM session_messages"
            " WHERE tenant=? AND channel=? AND chat=? AND turn<=? ORDER BY id",
            (key.tenant, key.channel, key.chat, through if through is not None else 2**62),
        ).fetchall()
        return tuple(ChatMessage(r, c, decode_calls(t), i) for r, c, t, i in rows)

    def _remember(self, key: SessionKey, cached: _Cached) -> None:
        self._cache[key] = cached
        self._cache.move_to_end(key)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # SQLITE_FULL may have rolled it back already
                db.execute("ROLLBACK")
            raise

    def append(
        self,
        key: SessionKey,
        user: Masked,
        answer: Masked,
        msg_id: str,
        now: float,
        steps: Sequence[ChatMessage] = (),
        sent: Masked | None = None,
    ) -> None:
        """Store one turn: the message, its tool-call steps (in order) and the answer,
        every text of them masked (`Unmasked` otherwise, before anything is written);
        `sent`: what the person sent, when it differs from `user` (`bridge.core.shown`)."""
        turn_messages = (ChatMessage("user", user), *steps, ChatMessage("assistant", answer))
        require_masked(turn_messages, "the session store")
        meta = "" if sent is None else require(sent, "the session store")
        cached = self._cache.pop(key, None)
        added = sum(message_chars(m) for m in turn_messages)
        with self._transaction() as db:  # the row counted up and read back in one statement
            found = db.execute(
                "UPDATE sessions SET updated_at=?, turns=turns+1, chars=chars+?"
                " WHERE tenant=? AND channel=? AND chat=?"
                " RETURNING started_at, updated_at, turns, dropped, chars, summary, summary_turns",
                (now, added, *_args(key)),
            ).fetchall()
            if found:
                grown = _Row(*found[0])
            else:
                db.execute(
                    "INSERT INTO sessions (tenant, channel, chat, started_at, updated_at,"
                    " turns, chars) VALUES (?, ?, ?, ?, ?, 1, ?)",
                    (*_args(key), now, now, added),
                )
                grown = _Row(now, now, 1, 0, added, "", 0)
            turn = grown.turns
            row = grown._replace(turns=turn - 1)  # as it was before this turn
            db.executemany(
                "INSERT INTO session_messages (tenant, channel, chat, turn, role, content,"
                " tool_calls, tool_call_id, msg_id, at, meta)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (*_row_args(key, turn, m, msg_id, now), meta if i == 0 else "")
                    for i, m in enumerate(turn_messages)
                ],
            )
            over = self._hard_drop(key, grown)
        if over:
            self._appended.pop(key, None)
        else:
            self._appended[key] = grown.total
        if cached is not None and cached.stamp == row.stamp and not over:
            self._remember(key, _Cached(grown.stamp, cached.history + turn_messages))
        for listener in self._listeners:
            try:
                listener(key, turn_messages)
            except Exception:  # the turn is stored; an index that failed catches up itself
                log.exception("a listener of stored turns failed")

    def _hard_drop(self, key: SessionKey, row: _Row) -> bool:
        """Past HARD_FACTOR budgets, drop the oldest turns now (counted); inside a transaction."""
        if row.total <= HARD_FACTOR * self.budget_chars:
            return False
        plan = plan_fold(self._sizes(key), row.total, self.budget_chars)
        if plan is None:
            return False
        self._remove(key, plan, row.summary, row.summarised, dropped=plan.turns)
        log.warning("session over twice its budget: dropped the %d oldest turns", plan.turns)
        return True

    def failed(self, key: SessionKey, user: Masked, sent: Masked, told: Masked, now: float) -> None:
        """Keep a turn the model failed for the page's history (never for a prompt):
        the person's message and what they were told (`bridge.core.turn_failures`),
        all masked (`Unmasked` otherwise)."""
        for text in (user, sent, told):
            require(text, "the failed-turn store")
        conversation = self.archive.current(key, now)
        self.archive.shown.failures.record(key, conversation, user, sent, told, now)

    def forget(self, key: SessionKey) -> None:
        """Drop the cached history of `key`: its rows were changed outside this store
        (`bridge.core.versions`)."""
        self._cache.pop(key, None)
        self._appended.pop(key, None)

    def over_budget(self, key: SessionKey) -> bool:
        """Whether the session is over its budget. Right after `append` of the same key this
        is the size that append wrote (no read): only appends grow a session, and they are
        serialised per chat, so a "no" is exact; a "yes" that a fold or reset made stale
        meanwhile only starts a summary whose `fold_plan` reads the row and finds nothing."""
        total = self._appended.pop(key, None)
        if total is not None:
            return total > self.budget_chars
        row = self._row(key)
        return row is not None and row.total > self.budget_chars

    def fold_plan(self, key: SessionKey) -> Fold | None:
        """What to fold now (a snapshot), or None when the session is within its budget."""
        row = self._row(key)
        if row is None:
            return None
        plan = plan_fold(self._sizes(key), row.total, self.budget_chars)
        if plan is None:
            return None
        messages = self._messages(key, plan.through)
        return Fold(row.started_at, plan, row.summary, messages, row.total, self._rows(key, plan))

    def fold(self, key: SessionKey, fold: Fold, summary: Masked) -> int | None:
        """Replace the planned turns by `summary`; the chars after, or None if the session moved."""
        return self._apply(key, fold, require(summary, "a session summary"))

    def drop(self, key: SessionKey, fold: Fold) -> int | None:
        """The fallback: drop the planned turns (counted); the chars after, or None if moved."""
        return self._apply(key, fold, None)

    def _apply(self, key: SessionKey, fold: Fold, summary: str | None) -> int | None:
        self._cache.pop(key, None)
        self._appended.pop(key, None)
        with self._transaction():
            row = self._row(key)
            if row is None or (row.started_at, row.summary) != (fold.started_at, fold.previous):
                return None
            if self._rows(key, fold.plan) != fold.rows:
                return None  # a reset, a hard drop or another process got there first
            if summary is None:
                self._remove(key, fold.plan, row.summary, row.summarised, dropped=fold.plan.turns)
                return row.total - fold.plan.chars
            summarised = row.summarised + fold.plan.turns
            self._remove(key, fold.plan, summary, summarised, dropped=0)
            return row.chars - fold.plan.chars + summary_chars(summary)

    def _remove(
        self, key: SessionKey, plan: FoldPlan, summary: str, summarised: int, dropped: int
    ) -> None:
        self._db.execute(
            "DELETE FROM session_messages WHERE tenant=? AND channel=? AND chat=? AND turn<=?",
            (*_args(key), plan.through),
        )
        self._db.execute(
            "UPDATE sessions SET chars=chars-?, dropped=dropped+?, summary=?, summary_turns=?"
            " WHERE tenant=? AND channel=? AND chat=?",
            (plan.chars, dropped, summary, summarised, *_args(key)),
        )

    def _rows(self, key: SessionKey, plan: FoldPlan) -> tuple[int, int]:
        """How many rows the turns up to `plan.through` are, and the newest row's id
        (ids are never reused: AUTOINCREMENT), so a fold sees if they changed."""
        found = self._db.execute(
            "SELECT COUNT(*), COALESCE(MAX(id), 0) FROM session_messages"
            " WHERE tenant=? AND channel=? AND chat=? AND turn<=?",
            (*_args(key), plan.through),
        ).fetchone()
        return (int(found[0]), int(found[1]))

    def _sizes(self, key: SessionKey) -> list[TurnSize]:
        rows = self._db.execute(
            f"SELECT turn, SUM({_SIZE}) FROM session_messages"
            " WHERE tenant=? AND channel=? AND chat=? GROUP BY turn ORDER BY turn",
            _args(key),
        ).fetchall()
        return [TurnSize(t, c) for t, c in rows]

    def reset(self, key: SessionKey, now: float) -> None:
        """Start a new conversation; the old one is archived, readable but not in any prompt
        (memory, tools and style are elsewhere)."""
        self._clear(key, now)

    def _row(self, key: SessionKey) -> _Row | None:
        found = self._db.execute(
            "SELECT started_at, updated_at, turns, dropped, chars, summary, summary_turns"
            " FROM sessions WHERE tenant=? AND channel=? AND chat=?",
            _args(key),
        ).fetchone()
        return None if found is None else _Row(*found)

    def _clear(self, key: SessionKey, now: float) -> None:
        self._cache.pop(key, None)
        self._appended.pop(key, None)
        with self._transaction() as db:
            self.archive.archive(key, now)
            db.execute(
                "DELETE FROM session_messages WHERE tenant=? AND channel=? AND chat=?", _args(key)
            )
            db.execute("DELETE FROM sessions WHERE tenant=? AND channel=? AND chat=?", _args(key))


def _args(key: SessionKey) -> tuple[str, str, str]:
    return (key.tenant, key.channel, key.chat)


def _row_args(
    key: SessionKey, turn: int, m: ChatMessage, msg_id: str, now: float
) -> tuple[object, ...]:
    calls = encode_calls(m.tool_calls)
    return (*_args(key), turn, m.role, m.content, calls, m.tool_call_id, msg_id, now)
