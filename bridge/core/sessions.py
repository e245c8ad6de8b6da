"""Conversations, persisted in SQLite and bounded by a character budget.

A session is keyed by (tenant, channel, chat). Each exchange (the user's
message and the final answer) is one turn; when the stored characters pass
the budget the oldest turns are dropped first and counted. A session idle
longer than the idle limit starts fresh on its next message. The clock is
passed in, so expiry is testable without waiting.

Histories of recently used chats are cached in memory; the cache entry is
used only while the stored row (turns, dropped) still matches, so another
process writing the same database (`roost send`) is seen at once.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from dataclasses import dataclass
from typing import NamedTuple

from bridge.types.backend import ChatMessage


@dataclass(frozen=True, slots=True)
class SessionKey:
    tenant: str
    channel: str
    chat: str


@dataclass(frozen=True, slots=True)
class Session:
    key: SessionKey
    history: tuple[ChatMessage, ...]
    started_at: float
    updated_at: float
    turns: int  # turns ever stored in this conversation
    dropped: int  # turns dropped to stay inside the budget
    chars: int  # characters currently stored
    expired: bool = False  # the previous conversation was idle too long


class _Row(NamedTuple):
    """A `sessions` table row."""

    started_at: float
    updated_at: float
    turns: int
    dropped: int
    chars: int


class _Cached(NamedTuple):
    """A remembered history, valid while the stored row still shows (started, turns, dropped)."""

    started_at: float
    turns: int
    dropped: int
    history: tuple[ChatMessage, ...]

    def matches(self, row: _Row) -> bool:
        return (self.started_at, self.turns, self.dropped) == (
            row.started_at,
            row.turns,
            row.dropped,
        )


class _Trim(NamedTuple):
    turns: int
    chars: int


class SessionStore:
    def __init__(
        self, conn: sqlite3.Connection, budget_chars: int, idle_s: float, cache_size: int = 256
    ) -> None:
        self._db = conn
        self.budget_chars = budget_chars
        self.idle_s = idle_s
        self._cache: OrderedDict[SessionKey, _Cached] = OrderedDict()
        self._cache_size = cache_size

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
        if cached is not None and cached.matches(row):
            self._cache.move_to_end(key)
            history = cached.history
        else:
            rows = self._db.execute(
                "SELECT role, content FROM session_messages"
                " WHERE tenant=? AND channel=? AND chat=? ORDER BY id",
                (key.tenant, key.channel, key.chat),
            ).fetchall()
            history = tuple(ChatMessage(role=r, content=c) for r, c in rows)
            self._remember(key, _Cached(row.started_at, row.turns, row.dropped, history))
        return Session(
            key, history, row.started_at, row.updated_at, row.turns, row.dropped, row.chars, expired
        )

    def _remember(self, key: SessionKey, cached: _Cached) -> None:
        self._cache[key] = cached
        self._cache.move_to_end(key)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def append(self, key: SessionKey, user: str, answer: str, msg_id: str, now: float) -> None:
        """Store one exchange, then drop the oldest turns beyond the budget."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            row = self._row(key)
            if row is None:
                db.execute(
                    "INSERT INTO sessions (tenant, channel, chat, started_at, updated_at)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (key.tenant, key.channel, key.chat, now, now),
                )
                turns, chars = 0, 0
            else:
                turns, chars = row.turns, row.chars
            cached = self._cache.pop(key, None)
            turn = turns + 1
            for role, content in (("user", user), ("assistant", answer)):
                db.execute(
                    "INSERT INTO session_messages"
                    " (tenant, channel, chat, turn, role, content, msg_id, at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (key.tenant, key.channel, key.chat, turn, role, content, msg_id, now),
                )
            chars += len(user) + len(answer)
            dropped = self._trim(key, chars)
            chars -= dropped.chars
            db.execute(
                "UPDATE sessions SET updated_at=?, turns=?, dropped=dropped+?, chars=?"
                " WHERE tenant=? AND channel=? AND chat=?",
                (now, turn, dropped.turns, chars, key.tenant, key.channel, key.chat),
            )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # SQLITE_FULL may have rolled it back already
                db.execute("ROLLBACK")
            raise
        if cached is not None and row is not None and cached.matches(row):
            exchange = (ChatMessage("user", user), ChatMessage("assistant", answer))
            kept = (cached.history + exchange)[2 * dropped.turns :]
            self._remember(key, _Cached(row.started_at, turn, row.dropped + dropped.turns, kept))

    def reset(self, key: SessionKey, now: float) -> None:
        """Forget this conversation (memory, tools and style are elsewhere)."""
        self._clear(key, now)

    def _trim(self, key: SessionKey, chars: int) -> _Trim:
        """Drop whole turns, oldest first, until under budget; keep the newest."""
        if chars <= self.budget_chars:
            return _Trim(0, 0)
        per_turn = self._db.execute(
            "SELECT turn, SUM(LENGTH(content)) FROM session_messages"
            " WHERE tenant=? AND channel=? AND chat=? GROUP BY turn ORDER BY turn",
            (key.tenant, key.channel, key.chat),
        ).fetchall()
        cut_turns, cut_chars, last = 0, 0, None
        for turn, size in per_turn[:-1]:
            if chars - cut_chars <= self.budget_chars:
                break
            cut_turns, cut_chars, last = cut_turns + 1, cut_chars + size, turn
        if last is not None:
            self._db.execute(
                "DELETE FROM session_messages WHERE tenant=? AND channel=? AND chat=? AND turn<=?",
                (key.tenant, key.channel, key.chat, last),
            )
        return _Trim(cut_turns, cut_chars)

    def _row(self, key: SessionKey) -> _Row | None:
        found = self._db.execute(
            "SELECT started_at, updated_at, turns, dropped, chars FROM sessions"
            " WHERE tenant=? AND channel=? AND chat=?",
            (key.tenant, key.channel, key.chat),
        ).fetchone()
        return None if found is None else _Row(*found)

    def _clear(self, key: SessionKey, now: float) -> None:
        self._cache.pop(key, None)
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            args = (key.tenant, key.channel, key.chat)
            db.execute("DELETE FROM session_messages WHERE tenant=? AND channel=? AND chat=?", args)
            db.execute("DELETE FROM sessions WHERE tenant=? AND channel=? AND chat=?", args)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
