"""Recall: search a tenant's past messages and show each hit dated, with the turns around it.

`Recall.find(dirs, query, k)` is the one search every surface uses: the model
tool `recall(query, k)`, `/recall QUERY` in any chat and `roost recall`. It
first waits for the exchanges the indexer has queued (`Indexer.settled`),
then reads the tenant's index through the `Database` (each statement off the
event loop, so a slow search stalls no other chat); `searcher` is that search
(a seam: the tests slow it down). With an `embedder` the query is embedded first and the
lexical ranking is fused with the nearest vectors (`hybrid`); when the model
fails, the words alone answer.
`excerpts(...)` renders hits for reading: date, where, who, the message, and
the messages just before and after it in its conversation (each cut), so the
reader sees what the hit answered. `searched(...)` writes `recall.searched`
to the audit chain: who searched, k, hit count, query length — never the
query. Queries are cut at 100,000 characters before anything reads them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from bridge.recall.backfill import EMBED_CHARS
from bridge.recall.embedder import Embedder, EmbedError
from bridge.recall.hybrid import FUSION, Fusion, hybrid_search
from bridge.recall.index import RecallIndex, Row
from bridge.recall.indexer import Indexer
from bridge.recall.search import DEFAULT, MAX_K, Hit, Tuning, search
from bridge.recall.terms import MAX_QUERY_CHARS
from bridge.recall.vectors import Dense
from bridge.types.audit_sink import AuditSink
from bridge.types.tenant_dirs import TenantDirs

log = logging.getLogger(__name__)
HIT_CHARS = 600
Searcher = Callable[[RecallIndex, str, int, Tuning], Awaitable[list[Hit]]]
NEAR_CHARS = 240


@dataclass(frozen=True, slots=True)
class Found:
    hits: list[Hit]
    ms: int


def when(at_ms: int) -> str:
    """The time as a UTC date; a time no date can show (stored before `roost import`
    refused them) as its milliseconds, never an error."""
    from bridge.recall.formats import utc  # the import formats' module: not with every roost

    at = utc(at_ms)
    if at is None:
        return f"time out of range ({at_ms} ms since 1970)"
    return at.strftime("%Y-%m-%d %H:%M UTC")


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _who(row: Row) -> str:
    return f"{row.role} ({row.name})" if row.name else row.role


class Recall:
    def __init__(
        self,
        indexer: Indexer,
        audit: AuditSink | None = None,
        tuning: Tuning = DEFAULT,
        clock: Callable[[], float] = time.perf_counter,
        embedder: Embedder | None = None,
        searcher: Searcher = search,
        fusion: Fusion = FUSION,
    ) -> None:
        self.indexer = indexer
        self.embedder = embedder
        self._audit = audit
        self._tuning = tuning
        self._clock = clock
        self._searcher = searcher
        self._fusion = fusion
        self._dense: dict[Path, Dense] = {}

    async def find(self, dirs: TenantDirs, query: str, k: int = 5) -> Found:
        """The best `k` hits (what the indexer has queued written first)."""
        started = self._clock()
        query = query[:MAX_QUERY_CHARS]
        vector = await self._query_vector(query)
        await self.indexer.settled()
        hits = await self._search(dirs, query, k, vector)
        return Found(hits, int((self._clock() - started) * 1000))

    async def render(self, dirs: TenantDirs, hits: list[Hit], around: int = 1) -> str:
        """The hits as dated excerpts, each with `around` messages before and after."""
        return await self._excerpts(await self.indexer.index(dirs), hits, around)

    async def _query_vector(self, query: str) -> list[float] | None:
        if self.embedder is None or not query.strip():
            return None
        try:
            return (await self.embedder.embed([query[:EMBED_CHARS]]))[0]
        except EmbedError as exc:
            log.warning("recall: the query was not embedded (%s); words alone answer", exc)
            return None

    async def _search(
        self, dirs: TenantDirs, query: str, k: int, vector: list[float] | None
    ) -> list[Hit]:
        index = await self.indexer.index(dirs)
        if vector is None:
            return await self._searcher(index, query, k, self._tuning)
        dense = self._dense.setdefault(dirs.root, Dense())
        await dense.refresh(index.db, index.tenant)
        near = dense.nearest(vector, self._fusion.depth)
        if not near:
            return await self._searcher(index, query, k, self._tuning)
        return await hybrid_search(index, query, near, k, self._tuning, self._fusion)

    async def _excerpts(self, index: RecallIndex, hits: list[Hit], around: int) -> str:
        blocks = []
        for n, hit in enumerate(hits, start=1):
            row = hit.row
            before, after = await index.neighbours(row, around, around)
            lines = [f"{n}. {when(row.at_ms)} · {row.conversation} · id {row.msg_id}"]
            lines += [f"   before · {_who(r)}: {_cut(r.text, NEAR_CHARS)}" for r in before]
            lines.append(f"   » {_who(row)}: {_cut(row.text, HIT_CHARS)}")
            lines += [f"   after · {_who(r)}: {_cut(r.text, NEAR_CHARS)}" for r in after]
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks)

    async def searched(self, dirs: TenantDirs, by: str, query: str, k: int, found: Found) -> None:
        """Audit one search: counts only."""
        if self._audit is None:
            return
        details = {
            "by": by,
            "k": min(k, MAX_K),
            "hits": len(found.hits),
            "query_chars": len(query),
            "ms": found.ms,
        }
        await self._audit.emit("recall.searched", dirs.tenant, details)
