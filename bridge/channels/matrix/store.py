"""What the Matrix channel keeps in roost.db (the Matrix migration's tables).

`matrix_sync`: the sync token (`next_batch`) per bot account. It is stored
once the batch was taken, together with the messages to answer
(`bridge.channels.matrix.inbox`, one transaction), so a restart resumes
after them: nothing is answered twice, and a message not answered before a
stop or a kill is answered by the next start. `matrix_direct`: each person's
direct room, the one they last wrote in (where `roost send --to
matrix:@user:server` and outbox entries go).

The store runs on the `Database` protocol (`bridge.storage`, SQLite or
PostgreSQL); every write is ONE statement (an upsert or a DELETE), never a
transaction held across an await.
"""

from __future__ import annotations

from bridge.storage.protocol import Database

SAVE_BATCH = (
    "INSERT INTO matrix_sync (account, next_batch, updated_ms) VALUES (?, ?, ?)"
    " ON CONFLICT (account) DO UPDATE SET next_batch = excluded.next_batch,"
    " updated_ms = excluded.updated_ms"
)


class MatrixStore:
    """The two tables of one bot account over a `Database` (injected by the composition
    root)."""

    def __init__(self, db: Database, account: str) -> None:
        self.db, self.account = db, account

    async def next_batch(self) -> str | None:
        value = await self.db.fetch_value(
            "SELECT next_batch FROM matrix_sync WHERE account = ?", (self.account,)
        )
        return str(value) if value is not None else None

    async def save_batch(self, token: str, now_ms: int) -> None:
        await self.db.execute(SAVE_BATCH, (self.account, token, now_ms))

    async def direct(self, user_id: str) -> str | None:
        value = await self.db.fetch_value(
            "SELECT room_id FROM matrix_direct WHERE account = ? AND user_id = ?",
            (self.account, user_id),
        )
        return str(value) if value is not None else None

    async def set_direct(self, user_id: str, room_id: str, now_ms: int) -> None:
        await self.db.execute(
            "INSERT INTO matrix_direct (account, user_id, room_id, updated_ms) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (account, user_id) DO UPDATE SET room_id = excluded.room_id,"
            " updated_ms = excluded.updated_ms",
            (self.account, user_id, room_id, now_ms),
        )

    async def forget_room(self, room_id: str) -> None:
        await self.db.execute(
            "DELETE FROM matrix_direct WHERE account = ? AND room_id = ?", (self.account, room_id)
        )
