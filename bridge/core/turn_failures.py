"""Turns the model failed, kept for the page's history and never for a prompt.

A turn whose model call failed stores nothing in the session (the person
simply tries again), but the person's message and the failure should still
be on the page after a reload, as they were when it happened. `record`
keeps both (the person's message as the session would have stored it, its
`meta`, and the short failure text the person was shown) in `failed_turns`,
with the conversation and the newest session row at that moment (`after`),
which places them among the session's messages. At most `KEEP` failed turns
per conversation are kept. The conversation archive reads them and forgets
them in its own unit when the conversation is archived (`between`,
`forgotten`: units, `bridge.storage.units`). Every statement goes through
the `Database` protocol (SQLite or PostgreSQL).
"""

from __future__ import annotations

from typing import NamedTuple

from bridge.storage.protocol import Database
from bridge.storage.units import Unit, drive, execute, fetch_all, fetch_one
from bridge.types.session_key import SessionKey

KEEP = 20  # failed turns per conversation (a long outage fails every message)
FAILED_META = '{"status":"error"}'
NEWEST = 2**62


class FailedRow(NamedTuple):
    id: int
    after: int  # the newest session row when it failed: it goes after that one
    role: str
    text: str
    meta: str
    at: float


_COLUMNS = "id, after, role, text, meta, at"
_INSERT = (
    "INSERT INTO failed_turns (conversation, tenant, after, role, text, meta, at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def _recorded(
    key: SessionKey, conversation: int, asked: str, meta: str, error: str, now: float
) -> Unit[None]:
    row = yield fetch_one(
        "SELECT COALESCE(MAX(id), 0) FROM session_messages WHERE tenant=? AND channel=? AND chat=?",
        (key.tenant, key.channel, key.chat),
    )
    after = int(row[0]) if row is not None else 0
    yield execute(_INSERT, (conversation, key.tenant, after, "user", asked, meta, now))
    yield execute(_INSERT, (conversation, key.tenant, after, "assistant", error, FAILED_META, now))
    yield execute(
        "DELETE FROM failed_turns WHERE conversation=? AND id NOT IN (SELECT id FROM"
        " failed_turns WHERE conversation=? ORDER BY id DESC LIMIT ?)",
        (conversation, conversation, 2 * KEEP),
    )


def between(conversation: int, tenant: str, lo: int, hi: int) -> Unit[list[FailedRow]]:
    """The failed turns placed after a session row with id in [lo, hi), oldest first."""
    rows = yield fetch_all(
        f"SELECT {_COLUMNS} FROM failed_turns WHERE conversation=? AND tenant=?"
        " AND after>=? AND after<? ORDER BY after, id",
        (conversation, tenant, lo, hi),
    )
    return [FailedRow(*r) for r in rows]


def forgotten(conversation: int, tenant: str) -> Unit[None]:
    """A conversation's failed turns go (archived or deleted), in the caller's unit."""
    yield execute(
        "DELETE FROM failed_turns WHERE conversation=? AND tenant=?", (conversation, tenant)
    )


class TurnFailures:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def record(
        self, key: SessionKey, conversation: int, asked: str, meta: str, error: str, now: float
    ) -> None:
        """Keep a failed turn: the person's message and what they were told (one unit)."""
        await self._db.atomic(_recorded(key, conversation, asked, meta, error, now))

    async def between(self, conversation: int, tenant: str, lo: int, hi: int) -> list[FailedRow]:
        """The failed turns placed after a session row with id in [lo, hi), oldest first."""
        return await drive(self._db, between(conversation, tenant, lo, hi))

    async def forget(self, conversation: int, tenant: str) -> None:
        await drive(self._db, forgotten(conversation, tenant))
