"""Message vectors in the tenant's index file, and the nearest ones to a query's vector.

Table `vectors` (id = the message's rowid in `messages`, vec = a unit float32
blob, `bridge.recall.embedder.pack`) and `vector_model` (the one model the
vectors came from). `use_model` starts the vectors afresh when the model
changes (vectors of two models are not comparable). `pending` names the
messages still without a vector (the backfill's work list), `store` writes a
batch in one transaction.

`Dense` keeps one tenant's vectors in memory (loaded once, then only the
rows added since) and scores a query vector against the newest `scan` of
them: a matrix product when numpy is installed (the `dense` extra; 200,000
by default), plain Python otherwise (about 18 us of CPU a 256-dimension
vector, `bench/recall_dense.py --latency`: 20,000 by default). Rows deleted
since (retention) may still be scored; the search drops ids it cannot read
back.
"""

from __future__ import annotations

import heapq
import importlib
import operator
import sqlite3
import threading
from array import array
from collections.abc import Sequence
from typing import Any

from bridge.recall.embedder import unit

SCAN_NUMPY = 200_000  # vectors scored per query with numpy
SCAN_PLAIN = 20_000  # without it (plain Python: ~0.4 s of CPU at 256 dimensions)
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS vectors (id INTEGER PRIMARY KEY, vec BLOB NOT NULL)",
    """CREATE TABLE IF NOT EXISTS vector_model (
        one INTEGER PRIMARY KEY CHECK (one = 1), name TEXT NOT NULL
    )""",
)


def _numpy() -> Any:
    try:
        return importlib.import_module("numpy")
    except ImportError:
        return None


def model_of(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT name FROM vector_model WHERE one = 1").fetchone()
    return str(row[0]) if row else None


def use_model(conn: sqlite3.Connection, name: str) -> bool:
    """Make `name` the vectors' model; True when the old vectors were dropped for it."""
    if model_of(conn) == name:
        return False
    with conn:
        conn.execute("DELETE FROM vectors")
        conn.execute("INSERT OR REPLACE INTO vector_model (one, name) VALUES (1, ?)", (name,))
    return True


def pending(conn: sqlite3.Connection, after: int, limit: int) -> list[tuple[int, str]]:
    """Up to `limit` (rowid, text) of messages past `after` without a vector, oldest first."""
    sql = (
        "SELECT m.id, m.text FROM messages m WHERE m.id > ? AND NOT EXISTS "
        "(SELECT 1 FROM vectors v WHERE v.id = m.id) ORDER BY m.id LIMIT ?"
    )
    return [(int(r[0]), str(r[1])) for r in conn.execute(sql, (after, limit))]


def store(conn: sqlite3.Connection, rows: Sequence[tuple[int, bytes]]) -> None:
    """Write (rowid, blob) pairs in one transaction (a deleted message's vector is skipped)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.executemany(
            "INSERT OR REPLACE INTO vectors (id, vec) SELECT ?, ? "
            "WHERE EXISTS (SELECT 1 FROM messages WHERE id = ?)",
            [(rid, blob, rid) for rid, blob in rows],
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0])


class Dense:
    """One tenant's vectors in memory, newest last; `nearest` scores the newest `scan`."""

    def __init__(self, scan: int | None = None) -> None:
        self._np = _numpy()
        self.scan = scan if scan is not None else SCAN_NUMPY if self._np is not None else SCAN_PLAIN
        self._ids: array[int] = array("q")
        self._data = bytearray()  # float32 rows, in id order
        self._dims = 0
        self._last = 0
        self._model: str | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._ids)

    def refresh(self, conn: sqlite3.Connection) -> None:
        """Load the vectors added since the last refresh (all of them after a model change)."""
        with self._lock:
            model = model_of(conn)
            if model != self._model:
                self._ids, self._data, self._dims, self._last = array("q"), bytearray(), 0, 0
                self._model = model
            sql = "SELECT id, vec FROM vectors WHERE id > ? ORDER BY id"
            for rid, blob in conn.execute(sql, (self._last,)):
                if not self._dims:
                    self._dims = len(blob) // 4
                if len(blob) != self._dims * 4:
                    continue  # a vector of another size: not comparable
                self._ids.append(rid)
                self._data += blob
                self._last = rid

    def nearest(self, query: Sequence[float], n: int) -> dict[int, float]:
        """rowid -> cosine of the `n` best among the newest `scan` vectors."""
        with self._lock:
            if not self._ids or len(query) != self._dims:
                return {}
            start = max(0, len(self._ids) - self.scan)
            q = unit(query)
            if self._np is not None:
                return self._nearest_np(q, start, n)
            d, ids = self._dims, self._ids
            with memoryview(self._data) as raw, raw.cast("f") as rows:
                scored = (
                    (sum(map(operator.mul, rows[i * d : (i + 1) * d], q)), ids[i])
                    for i in range(start, len(ids))
                )
                best = heapq.nlargest(n, scored)
            return {rid: s for s, rid in best}

    def _nearest_np(self, q: list[float], start: int, n: int) -> dict[int, float]:
        np = self._np
        d = self._dims
        matrix = np.frombuffer(self._data, dtype="<f4", offset=start * d * 4).reshape(-1, d)
        sims = matrix @ np.asarray(q, dtype="<f4")
        n = min(n, len(sims))
        top = np.argpartition(-sims, n - 1)[:n] if n < len(sims) else np.arange(len(sims))
        return {int(self._ids[start + i]): float(sims[i]) for i in top}
