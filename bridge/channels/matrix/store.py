"""What the Matrix channel keeps in roost.db (the Matrix migration's tables).

`matrix_sync`: the sync token (`next_batch`) per bot account. It is stored
only after every message of that sync batch was taken (handed to its
chat's queue), so a restart resumes after them: nothing is answered twice,
and nothing taken before the stop is lost unless the stop cut its answer
off. `matrix_direct`: each person's direct room, the one they last wrote
in (where `roost send --to matrix:@user:server` and outbox entries go).
"""

from __future__ import annotations

import sqlite3


class MatrixStore:
    """The two tables over the roost's one connection (autocommit mode)."""

    def __init__(self, conn: sqlite3.Connection, account: str) -> None:
        self.conn, self.account = conn, account

    def next_batch(self) -> str | None:
        row = self.conn.execute(
            "SELECT next_batch FROM matrix_sync WHERE account = ?", (self.account,)
        ).fetchone()
        return str(row[0]) if row else None

    def save_batch(self, token: str, now_ms: int) -> None:
        self.conn.execute(
            "INSERT INTO matrix_sync (account, next_batch, updated_ms) VALUES (?, ?, ?)"
            " ON CONFLICT (account) DO UPDATE SET next_batch = excluded.next_batch,"
            " updated_ms = excluded.updated_ms",
            (self.account, token, now_ms),
        )

    def direct(self, user_id: str) -> str | None:
        row = self.conn.execute(
            "SELECT room_id FROM matrix_direct WHERE account = ? AND user_id = ?",
            (self.account, user_id),
        ).fetchone()
        return str(row[0]) if row else None

    def set_direct(self, user_id: str, room_id: str, now_ms: int) -> None:
        self.conn.execute(
            "INSERT INTO matrix_direct (account, user_id, room_id, updated_ms) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (account, user_id) DO UPDATE SET room_id = excluded.room_id,"
            " updated_ms = excluded.updated_ms",
            (self.account, user_id, room_id, now_ms),
        )

    def forget_room(self, room_id: str) -> None:
        self.conn.execute(
            "DELETE FROM matrix_direct WHERE account = ? AND room_id = ?", (self.account, room_id)
        )
