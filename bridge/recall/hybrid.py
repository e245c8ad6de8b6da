"""Lexical and dense rankings fused by reciprocal rank fusion (pure but for the index reads).

`fuse(rankings)` gives each rowid the sum over the rankings of
`weight / (k + rank)` (Cormack, Clarke & Büttcher, SIGIR 2009: k = 60), so a
message high in either list rises and one high in both rises most, without
comparing a bm25 score to a cosine. `hybrid_search` fuses roost's lexical
ranking (`search.rank`: bm25, feedback, context, speaker) with the vectors'
nearest messages; a message only the vectors found joins the list too, which
is the point: a question worded unlike its answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bridge.recall.index import RecallIndex
from bridge.recall.search import DEFAULT, MAX_K, Hit, Tuning, best, rank

RRF_K = 60


@dataclass(frozen=True, slots=True)
class Fusion:
    k: int = RRF_K
    lexical: float = 1.0  # weight of the lexical ranking
    dense: float = 1.0  # weight of the vectors' ranking
    depth: int = 100  # how far down each ranking counts


FUSION = Fusion()


def fuse(rankings: Sequence[tuple[Sequence[int], float]], k: int = RRF_K) -> dict[int, float]:
    """rowid -> sum of weight / (k + rank) over the (ranking, weight) pairs (rank from 1)."""
    out: dict[int, float] = {}
    for ranking, weight in rankings:
        for place, rid in enumerate(ranking, start=1):
            out[rid] = out.get(rid, 0.0) + weight / (k + place)
    return out


async def hybrid_search(
    index: RecallIndex,
    query: str,
    dense: dict[int, float],
    k: int = 10,
    tuning: Tuning = DEFAULT,
    fusion: Fusion = FUSION,
) -> list[Hit]:
    """The best `k` messages by the fused lexical and dense rankings (`dense`: rowid -> cosine)."""
    k = max(1, min(k, MAX_K))
    lexical = best(await rank(index, query, tuning), fusion.depth)
    nearest = best(dense, fusion.depth)
    fused = fuse(((lexical, fusion.lexical), (nearest, fusion.dense)), fusion.k)
    top = best(fused, k + 10)  # a few spare: a vector of a deleted message reads back nothing
    rows = await index.rows(top)
    return [Hit(rows[r], fused[r]) for r in top if r in rows][:k]
