"""Per-chat loadout choices (persona, audience) in the `chat_settings` table.

Rows are keyed by (tenant, channel, chat, key), so one tenant's choice is
never visible to another. `get_all` is one indexed query per turn.
"""

from __future__ import annotations

import sqlite3


class ChatSettings:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def get_all(self, tenant: str, channel: str, chat: str) -> dict[str, str]:
        rows = self._db.execute(
            "SELECT key, value FROM chat_settings WHERE tenant=? AND channel=? AND chat=?",
            (tenant, channel, chat),
        ).fetchall()
        return {k: v for k, v in rows}

    def get(self, tenant: str, channel: str, chat: str, key: str) -> str | None:
        return self.get_all(tenant, channel, chat).get(key)

    def set(self, tenant: str, channel: str, chat: str, key: str, value: str) -> None:
        self._db.execute(
            "INSERT INTO chat_settings (tenant, channel, chat, key, value) VALUES (?,?,?,?,?) "
            "ON CONFLICT (tenant, channel, chat, key) DO UPDATE SET value=excluded.value",
            (tenant, channel, chat, key, value),
        )

    def clear(self, tenant: str, channel: str, chat: str, key: str) -> bool:
        cur = self._db.execute(
            "DELETE FROM chat_settings WHERE tenant=? AND channel=? AND chat=? AND key=?",
            (tenant, channel, chat, key),
        )
        return cur.rowcount > 0
