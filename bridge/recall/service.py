"""Recall: search a tenant's past messages and show each hit dated, with the turns around it.

`Recall.find(dirs, query, k)` is the one search every surface uses: the model
tool `recall(query, k)`, `/recall QUERY` in any chat and `roost recall`.
`excerpts(...)` renders hits for reading: date, where, who, the message, and
the messages just before and after it in its conversation (each cut), so the
reader sees what the hit answered. `searched(...)` writes `recall.searched`
to the audit chain: who searched, k, hit count, query length — never the
query. Queries are cut at 100,000 characters before anything reads them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from bridge.recall.index import Row
from bridge.recall.indexer import Indexer
from bridge.recall.search import DEFAULT, MAX_K, Hit, Tuning, search
from bridge.recall.terms import MAX_QUERY_CHARS
from bridge.types.audit_sink import AuditSink
from bridge.types.tenant_dirs import TenantDirs

HIT_CHARS = 600
NEAR_CHARS = 240


@dataclass(frozen=True, slots=True)
class Found:
    hits: list[Hit]
    ms: int


def when(at_ms: int) -> str:
    return datetime.fromtimestamp(at_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")


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
    ) -> None:
        self.indexer = indexer
        self._audit = audit
        self._tuning = tuning
        self._clock = clock

    def find(self, dirs: TenantDirs, query: str, k: int = 5) -> Found:
        started = self._clock()
        hits = search(self.indexer.index(dirs), query[:MAX_QUERY_CHARS], k, self._tuning)
        return Found(hits, int((self._clock() - started) * 1000))

    def excerpts(self, dirs: TenantDirs, hits: list[Hit], around: int = 1) -> str:
        """The hits as dated excerpts, each with `around` messages before and after."""
        index = self.indexer.index(dirs)
        blocks = []
        for n, hit in enumerate(hits, start=1):
            row = hit.row
            before, after = index.neighbours(row, around, around)
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
