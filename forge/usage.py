"""Usage counters of saved tools: calls, errors, last use.

Stored in `usage.sqlite` beside the tools (one table, WAL, one row per tool
name) so concurrent turns can count without a lock file and a crash never
leaves a half-written counter. Times are integer milliseconds since the epoch.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from forge.atomic import private_file

FILENAME = "usage.sqlite"


@dataclass(frozen=True, slots=True)
class Usage:
    calls: int = 0
    errors: int = 0
    last_used_ms: int | None = None


class UsageStore:
    def __init__(self, directory: Path) -> None:
        self.path = directory / FILENAME

    def _connect(self) -> sqlite3.Connection:
        # 0600 before SQLite opens it: its -wal and -shm files take the same mode
        private_file(self.path)
        conn = sqlite3.connect(self.path, timeout=10, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS usage (name TEXT PRIMARY KEY, calls INTEGER NOT NULL, "
            "errors INTEGER NOT NULL, last_used_ms INTEGER)"
        )
        return conn

    def record(self, name: str, ok: bool, now_ms: int) -> None:
        conn = self._connect()
        try:
            conn.execute(
                "INSERT INTO usage (name, calls, errors, last_used_ms) VALUES (?, 1, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET calls = calls + 1, "
                "errors = errors + excluded.errors, last_used_ms = excluded.last_used_ms",
                (name, 0 if ok else 1, now_ms),
            )
        finally:
            conn.close()

    def get(self, name: str) -> Usage:
        return self.all().get(name, Usage())

    def all(self) -> dict[str, Usage]:
        if not self.path.exists():
            return {}
        conn = self._connect()
        try:
            rows = conn.execute("SELECT name, calls, errors, last_used_ms FROM usage").fetchall()
        finally:
            conn.close()
        return {r[0]: Usage(r[1], r[2], r[3]) for r in rows}

    def restore(self, name: str, usage: Usage) -> None:
        """Set `name`'s counters to `usage` (a removed tool brought back as it was)."""
        conn = self._connect()
        try:
            conn.execute(
                "INSERT INTO usage (name, calls, errors, last_used_ms) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET calls = excluded.calls, "
                "errors = excluded.errors, last_used_ms = excluded.last_used_ms",
                (name, usage.calls, usage.errors, usage.last_used_ms),
            )
        finally:
            conn.close()

    def forget(self, name: str) -> None:
        if not self.path.exists():
            return
        conn = self._connect()
        try:
            conn.execute("DELETE FROM usage WHERE name = ?", (name,))
        finally:
            conn.close()
