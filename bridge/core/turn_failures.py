"""Turns the model failed, kept for the page's history and never for a prompt.

A turn whose model call failed stores nothing in the session (the person
simply tries again), but the person's message and the failure should still
be on the page after a reload, as they were when it happened. `record`
keeps both (the person's message as the session would have stored it, its
`meta`, and the short failure text the person was shown) in `failed_turns`,
with the conversation and the newest session row at that moment (`after`),
which places them among the session's messages. At most `KEEP` failed turns
per conversation are kept. `archive` hands them to the conversation archive
and forgets them when the conversation is archived.
"""

from __future__ import annotations

import sqlite3
from typing import NamedTuple

from bridge.types.session_key import SessionKey

KEEP = 20  # failed turns per conversation (a long outage fails every message)
FAILED_META = '{"status":"error"}'


class FailedRow(NamedTuple):
    id: int
    after: int  # the newest session row when it failed: it goes after that one
    role: str
    text: str
    meta: str
    at: float


_COLUMNS = "id, after, role, text, meta, at"


class TurnFailures:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._db = conn

    def record(
        self, key: SessionKey, conversation: int, asked: str, meta: str, error: str, now: float
    ) -> None:
        """Keep a failed turn: the person's message and what they were told."""
        db = self._db
        (after,) = db.execute(
            "SELECT COALESCE(MAX(id), 0) FROM session_messages"
            " WHERE tenant=? AND channel=? AND chat=?",
            (key.tenant, key.channel, key.chat),
        ).fetchone()
        insert = (
            "INSERT INTO failed_turns (conversation, tenant, after, role, text, meta, at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)"
        )
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(insert, (conversation, key.tenant, after, "user", asked, meta, now))
            db.execute(
                insert, (conversation, key.tenant, after, "assistant", error, FAILED_META, now)
            )
            db.execute(
                "DELETE FROM failed_turns WHERE conversation=? AND id NOT IN (SELECT id FROM"
                " failed_turns WHERE conversation=? ORDER BY id DESC LIMIT ?)",
                (conversation, conversation, 2 * KEEP),
            )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def between(self, conversation: int, tenant: str, lo: int, hi: int) -> list[FailedRow]:
        """The failed turns placed after a session row with id in [lo, hi), oldest first."""
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM failed_turns WHERE conversation=? AND tenant=?"
            " AND after>=? AND after<? ORDER BY after, id",
            (conversation, tenant, lo, hi),
        ).fetchall()
        return [FailedRow(*r) for r in rows]

    def take(self, conversation: int, tenant: str) -> list[FailedRow]:
        """All of a conversation's failed turns, oldest first, forgotten here (inside the
        caller's transaction: the archive keeps them from now on)."""
        rows = self.between(conversation, tenant, 0, 2**62)
        self._db.execute(
            "DELETE FROM failed_turns WHERE conversation=? AND tenant=?", (conversation, tenant)
        )
        return rows

    def forget(self, conversation: int, tenant: str) -> None:
        self._db.execute(
            "DELETE FROM failed_turns WHERE conversation=? AND tenant=?", (conversation, tenant)
        )
