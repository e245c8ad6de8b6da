"""The session store's statements (`bridge.core.sessions`), and the units made of them.

Plain SQL both backends run (`bridge.storage`), and generators of steps that
`Database.atomic` runs as one transaction (`bridge.storage.units`): a turn's
append (the row counted up by one upsert that returns it, the turn's
messages, the hard drop when one is due), a fold's plan and its application
(only while the folded rows are as planned, the row locked as read), and a
clear's delete. No state: the store keeps its cache.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from bridge.core.compaction import Fold, FoldPlan, TurnSize, plan_fold, summary_chars
from bridge.core.history import decode_calls, encode_calls
from bridge.storage.protocol import Row
from bridge.storage.units import Unit, execute, execute_many, fetch_all, fetch_one
from bridge.types.backend import ChatMessage
from bridge.types.session_key import SessionKey

log = logging.getLogger("bridge.core.sessions")
HARD_FACTOR = 2  # past this many budgets, drop at once instead of waiting for a summary
SIZE = "LENGTH(content) + LENGTH(tool_calls)"  # message_chars, in SQL
KEY = "tenant=? AND channel=? AND chat=?"
COLUMNS = "started_at, updated_at, turns, dropped, chars, summary, summary_turns"
NEWEST = 2**62
NO_STAMP = (-1.0, -1, -1, -1)  # matches no row: the messages are read

# The row, and its messages only when the cached stamp is not the row's: a cache hit is
# one row (the messages' range starts past the newest id, an index seek to nothing).
LOAD = (
    "SELECT s.started_at, s.updated_at, s.turns, s.dropped, s.chars, s.summary,"
    " s.summary_turns, m.role, m.content, m.tool_calls, m.tool_call_id"
    " FROM sessions s LEFT JOIN session_messages m"
    " ON m.tenant = s.tenant AND m.channel = s.channel AND m.chat = s.chat"
    " AND m.id > CASE WHEN s.started_at = ? AND s.turns = ? AND s.dropped = ?"
    " AND s.summary_turns = ? THEN CAST(? AS BIGINT) ELSE 0 END"
    " WHERE s.tenant = ? AND s.channel = ? AND s.chat = ? ORDER BY m.id"
)
# One more turn counted on the row (made when missing), and the row as it is after.
COUNT_TURN = (
    "INSERT INTO sessions (tenant, channel, chat, started_at, updated_at, turns, chars)"
    " VALUES (?, ?, ?, ?, ?, 1, ?) ON CONFLICT (tenant, channel, chat) DO UPDATE SET"
    " updated_at = excluded.updated_at, turns = sessions.turns + 1,"
    " chars = sessions.chars + excluded.chars"
    f" RETURNING {COLUMNS}"
)
INSERT_MESSAGE = (
    "INSERT INTO session_messages (tenant, channel, chat, turn, role, content,"
    " tool_calls, tool_call_id, msg_id, at, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class SessionRow(NamedTuple):
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


def appended(
    key: SessionKey,
    messages: tuple[ChatMessage, ...],
    msg_id: str,
    now: float,
    meta: str,
    budget: int,
) -> Unit[tuple[SessionRow, bool]]:
    """One turn stored: the row counted up and read back in one statement, then the
    turn's messages (`meta` on the first), then the hard drop if due; the row after,
    and whether it dropped."""
    calls = [encode_calls(m.tool_calls) for m in messages]  # once: counted and stored
    added = sum(len(m.content) + len(c) for m, c in zip(messages, calls, strict=True))
    tenant, channel, chat = key.tenant, key.channel, key.chat
    found = yield fetch_one(COUNT_TURN, (tenant, channel, chat, now, now, added))
    grown = SessionRow(*found)
    turn = grown.turns
    rows = [
        (tenant, channel, chat, turn, m.role, m.content, c, m.tool_call_id, msg_id, now, "")
        for m, c in zip(messages, calls, strict=True)
    ]
    if meta and rows:
        rows[0] = (*rows[0][:-1], meta)
    yield execute_many(INSERT_MESSAGE, rows)
    over = yield from _hard_drop(key, grown, budget)
    return grown, over


def _hard_drop(key: SessionKey, row: SessionRow, budget: int) -> Unit[bool]:
    """Past HARD_FACTOR budgets, drop the oldest turns now (counted)."""
    if row.total <= HARD_FACTOR * budget:
        return False
    plan = plan_fold((yield from _sizes(key)), row.total, budget)
    if plan is None:
        return False
    yield from _remove(key, plan, row.summary, row.summarised, dropped=plan.turns)
    log.warning("session over twice its budget: dropped the %d oldest turns", plan.turns)
    return True


def planned(key: SessionKey, budget: int) -> Unit[Fold | None]:
    """What to fold now (a snapshot), or None when the session is within its budget."""
    found = yield fetch_one(f"SELECT {COLUMNS} FROM sessions WHERE {KEY}", args(key))
    if found is None:
        return None
    row = SessionRow(*found)
    plan = plan_fold((yield from _sizes(key)), row.total, budget)
    if plan is None:
        return None
    rows = yield fetch_all(
        "SELECT role, content, tool_calls, tool_call_id FROM session_messages"
        f" WHERE {KEY} AND turn<=? ORDER BY id",
        (*args(key), plan.through),
    )
    messages = tuple(message_of(r) for r in rows)
    held = yield from _held(key, plan)
    return Fold(row.started_at, plan, row.summary, messages, row.total, held)


def cleared(key: SessionKey) -> Unit[None]:
    """The session's rows deleted (after the archive kept them, in its unit)."""
    yield execute(f"DELETE FROM session_messages WHERE {KEY}", args(key))
    yield execute(f"DELETE FROM sessions WHERE {KEY}", args(key))


def applied(key: SessionKey, fold: Fold, summary: str | None, for_update: str) -> Unit[int | None]:
    """A planned fold, if the session has not moved under it: the chars after, or None.
    The row is locked as read (PostgreSQL), so no reset or append lands in between."""
    found = yield fetch_one(f"SELECT {COLUMNS} FROM sessions WHERE {KEY} {for_update}", args(key))
    if found is None:
        return None
    row = SessionRow(*found)
    if (row.started_at, row.summary) != (fold.started_at, fold.previous):
        return None
    if (yield from _held(key, fold.plan)) != fold.rows:
        return None  # a reset, a hard drop or another process got there first
    if summary is None:
        yield from _remove(key, fold.plan, row.summary, row.summarised, dropped=fold.plan.turns)
        return row.total - fold.plan.chars
    summarised = row.summarised + fold.plan.turns
    yield from _remove(key, fold.plan, summary, summarised, dropped=0)
    return row.chars - fold.plan.chars + summary_chars(summary)


def _remove(
    key: SessionKey, plan: FoldPlan, summary: str, summarised: int, dropped: int
) -> Unit[None]:
    yield execute(
        f"DELETE FROM session_messages WHERE {KEY} AND turn<=?", (*args(key), plan.through)
    )
    yield execute(
        "UPDATE sessions SET chars=chars-?, dropped=dropped+?, summary=?, summary_turns=?"
        f" WHERE {KEY}",
        (plan.chars, dropped, summary, summarised, *args(key)),
    )


def _held(key: SessionKey, plan: FoldPlan) -> Unit[tuple[int, int]]:
    """How many rows the turns up to `plan.through` are, and the newest row's id
    (ids are never reused), so a fold sees if they changed."""
    found = yield fetch_one(
        f"SELECT COUNT(*), COALESCE(MAX(id), 0) FROM session_messages WHERE {KEY} AND turn<=?",
        (*args(key), plan.through),
    )
    return (int(found[0]), int(found[1]))


def _sizes(key: SessionKey) -> Unit[list[TurnSize]]:
    rows = yield fetch_all(
        f"SELECT turn, SUM({SIZE}) FROM session_messages WHERE {KEY} GROUP BY turn ORDER BY turn",
        args(key),
    )
    return [TurnSize(int(t), int(c)) for t, c in rows]


def message_of(row: Row) -> ChatMessage:
    role, content, calls, call_id = row
    return ChatMessage(role, content, decode_calls(calls), call_id)


def args(key: SessionKey) -> tuple[str, str, str]:
    return (key.tenant, key.channel, key.chat)
