"""Message vectors of a tenant's index, and the nearest ones to a query's vector.

Rows of `recall_vectors` (tenant, id = the message's id in `recall_messages`,
vec = a unit float32 blob, `bridge.recall.embedder.pack`) and
`recall_vector_model` (the one model a tenant's vectors came from), on the
`Database`. `use_model` starts the vectors afresh when the model changes
(vectors of two models are not comparable): the vectors go first, then the
model's name, so a crash between leaves no vector of the old model under the
new name. `pending` names the messages still without a vector (the backfill's
work list), `store` writes a batch (one `execute_many`).

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
import threading
from array import array
from collections.abc import Sequence
from typing import Any

from bridge.recall.embedder import unit
from bridge.storage.protocol import Database

SCAN_NUMPY = 200_000  # vectors scored per query with numpy
SCAN_PLAIN = 20_000  # without it (plain Python: ~0.4 s of CPU at 256 dimensions)
PAGE = 5000  # vectors read per statement when loading


def _numpy() -> Any:
    try:
        return importlib.import_module("numpy")
    except ImportError:
        return None


async def model_of(db: Database, tenant: str) -> str | None:
    got = await db.fetch_value("SELECT name FROM recall_vector_model WHERE tenant = ?", (tenant,))
    return None if got is None else str(got)


async def use_model(db: Database, tenant: str, name: str) -> bool:
    """Make `name` the tenant's vectors' model; True when the old vectors were dropped for it."""
    if await model_of(db, tenant) == name:
        return False
    await db.execute("DELETE FROM recall_vectors WHERE tenant = ?", (tenant,))
    await db.execute(
        "INSERT INTO recall_vector_model (tenant, name) VALUES (?, ?) "
        "ON CONFLICT (tenant) DO UPDATE SET name = excluded.name",
        (tenant, name),
    )
    return True


async def pending(db: Database, tenant: str, after: int, limit: int) -> list[tuple[int, str]]:
    """Up to `limit` (id, text) of messages past `after` without a vector, oldest first."""
    sql = (
        "SELECT m.id, m.text FROM recall_messages m WHERE m.tenant = ? AND m.id > ? "
        "AND NOT EXISTS (SELECT 1 FROM recall_vectors v WHERE v.tenant = m.tenant "
        "AND v.id = m.id) ORDER BY m.id LIMIT ?"
    )
    return [(int(r[0]), str(r[1])) for r in await db.fetch_all(sql, (tenant, after, limit))]


async def store(db: Database, tenant: str, rows: Sequence[tuple[int, bytes]]) -> None:
    """Write (id, blob) pairs (a deleted message's vector is skipped)."""
    await db.execute_many(
        "INSERT INTO recall_vectors (tenant, id, vec) SELECT ?, ?, ? WHERE EXISTS "
        "(SELECT 1 FROM recall_messages WHERE tenant = ? AND id = ?) "
        "ON CONFLICT (tenant, id) DO UPDATE SET vec = excluded.vec",
        [(tenant, rid, blob, tenant, rid) for rid, blob in rows],
    )


async def count(db: Database, tenant: str) -> int:
    got = await db.fetch_value("SELECT count(*) FROM recall_vectors WHERE tenant = ?", (tenant,))
    return int(got or 0)


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

    async def refresh(self, db: Database, tenant: str) -> None:
        """Load the vectors added since the last refresh (all of them after a model change)."""
        model = await model_of(db, tenant)
        with self._lock:
            if model != self._model:
                self._ids, self._data, self._dims, self._last = array("q"), bytearray(), 0, 0
                self._model = model
            last = self._last
        sql = "SELECT id, vec FROM recall_vectors WHERE tenant = ? AND id > ? ORDER BY id LIMIT ?"
        while True:
            rows = await db.fetch_all(sql, (tenant, last, PAGE))
            with self._lock:
                if self._model != model or self._last != last:
                    return  # another refresh moved on meanwhile
                for rid, blob in rows:
                    if not self._dims:
                        self._dims = len(blob) // 4
                    if len(blob) != self._dims * 4:
                        continue  # a vector of another size: not comparable
                    self._ids.append(int(rid))
                    self._data += bytes(blob)
                self._last = last = int(rows[-1][0]) if rows else last
            if len(rows) < PAGE:
                return

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
