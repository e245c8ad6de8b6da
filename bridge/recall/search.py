"""Search one tenant's index: BM25 over stemmed terms, then the conversation around each hit.

Ranking over what the index returns:
1. the query's terms (`query_terms`: stop words out, stems both ways) less the
   names of the index's speakers (`RecallIndex.speaker_terms`: in "What did
   Caroline paint?" the name says who said it, not what was said: as a word
   it finds the other person's "Caroline, look!"), the rarest of them up to
   `postings` matching messages (`_affordable`), go to the tenant's text
   index as "any of these terms" (`Database.text_index`: SQLite postings or tsvector,
   quoted by `bridge.storage.fts`), ranked by bm25 over the text and the
   speaker's name;
   past `postings` matches only the newest are scored, so the work is
   bounded however large the index; the best `pool` come back; a hit whose
   speaker the query names (or "I"/"you": the user or assistant role) is
   raised by `named` at once, before anything below reads the scores;
2. pseudo-relevance feedback (`feedback` > 0): the `feedback_terms` terms the
   best `feedback_docs` hits share most, not already in the query, are
   searched too and their scores added at `feedback` weight (RM3-style
   expansion, no model); they are optional, so they get a budget of their
   own, `feedback_postings`, and one found in more messages than that is left
   out whole (bm25 counts every message of every term it scores: at
   1M messages such a term cost as much as the query itself; leaving it out
   did not lower dev recall);
3. conversation context: a score gains `context` times the scores of the
   messages up to `window` places before and after it in its conversation
   (divided by the distance), plus `session` times the best score in its
   conversation (an answer is often split over a question and its reply);
4. speaker: a hit whose speaker the query names is raised by `speaker` again;
5. the best `k` are returned with their scores, best first.
Every figure of `Tuning` was chosen on the dev split and checked by leaving
one conversation out (`bench/recall_bench.py`). The reads await the
`Database` (off the event loop); the ranking between them is plain Python.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from bridge.recall.index import RecallIndex, Row, who_terms
from bridge.recall.terms import ENGLISH_STOP, GERMAN_STOP, index_terms, query_terms, words

MAX_K = 50
_PERSONS = """
    i me my mine myself ich mich mir mein meine meinem meinen meiner
    you your yours yourself du dich dir dein deine deinem deinen deiner
"""
_FIRST, _SECOND = (frozenset(line.split()) for line in _PERSONS.strip().splitlines())


def _persons(query: str) -> set[str]:
    """The roles a query points at: "what did I say" -> user, "what did you say" -> assistant."""
    said = set(words(query))
    roles = ("user",) * bool(said & _FIRST) + ("assistant",) * bool(said & _SECOND)
    return set(index_terms(" ".join(roles)).split())


@dataclass(frozen=True, slots=True)
class Tuning:
    pool: int = 200
    postings: int = 2_000
    context: float = 0.5
    window: int = 2
    session: float = 0.5
    speaker: float = 0.3
    feedback: float = 0.1
    feedback_docs: int = 5
    feedback_terms: int = 5
    feedback_postings: int = 500
    named: float = 0.3


DEFAULT = Tuning()


@dataclass(frozen=True, slots=True)
class Hit:
    row: Row
    score: float


async def _bm25(
    index: RecallIndex, terms: list[str], tuning: Tuning, postings: int
) -> dict[int, float]:
    """rowid -> bm25 score (higher is better) of the best `pool` rows matching any term.

    When more than `postings` messages match, only the newest `postings` of them are
    scored (recency breaks the tie), so one query's work is bounded at any index size."""
    if not any(t.strip() for t in terms):
        return {}
    since = await index.newest_bound(terms, postings)
    return dict(await index.bm25(terms, tuning.pool, since))


async def _affordable(
    index: RecallIndex, terms: list[str], budget: int, least: int = 1
) -> list[str]:
    """The rarest terms whose messages add up to at most `budget` (at least the `least`
    rarest: 1 for the query's own terms, 0 for optional ones such as the feedback's).

    A term in more messages weighs less in BM25 and costs more to score: past
    the budget the common ones are left out. A small index keeps every term.
    Counts stop past the budget, so this costs at most `budget` steps a term."""
    df = await index.doc_freq(terms, budget + 1)
    kept: list[str] = []
    total = 0
    for term in sorted((t for t in terms if df[t]), key=df.__getitem__):
        if len(kept) >= least and total + df[term] > budget:
            break
        kept.append(term)
        total += df[term]
    return kept


def _expansion(rows: list[Row], query: list[str], count: int) -> list[str]:
    """The terms most of the top rows share, not in the query and not stop words."""
    seen: Counter[str] = Counter()
    for row in rows:
        seen.update(dict.fromkeys(index_terms(row.text).split(), 1))
    skip = set(query) | ENGLISH_STOP | GERMAN_STOP
    ranked = sorted(seen.items(), key=lambda kv: (-kv[1], kv[0]))  # ties by the term: stable
    picked = [t for t, n in ranked if n > 1 and t not in skip and len(t) > 2]
    return picked[:count]


async def rank(index: RecallIndex, query: str, tuning: Tuning = DEFAULT) -> dict[int, float]:
    """rowid -> score of every message the query's terms found (at most `pool`, plus
    feedback), with context and speaker applied: higher is better."""
    asked = query_terms(query)
    names = set(asked) & await index.speaker_terms()  # "What did Caroline say": who, not what
    kept = [t for t in asked if t not in names] or asked
    terms = await _affordable(index, kept, tuning.postings)
    scores = await _bm25(index, terms, tuning, tuning.postings)
    if not scores:
        return {}
    wanted = names | _persons(query)
    speakers = await index.speakers(scores)  # rowid -> (conversation id, role, name)
    if tuning.named > 0 and wanted:
        _boost(scores, speakers, wanted, tuning.named)
    if tuning.feedback > 0:
        for r, s in (await _feedback(index, scores, [*terms, *names], tuning)).items():
            scores[r] = scores.get(r, 0.0) + tuning.feedback * s
        speakers.update(await index.speakers([r for r in scores if r not in speakers]))
    scores = {r: s for r, s in scores.items() if r in speakers}
    ranked = _with_context(scores, speakers, tuning)
    if tuning.speaker > 0 and wanted:
        _boost(ranked, speakers, wanted, tuning.speaker)
    return ranked


async def _feedback(
    index: RecallIndex, scores: dict[int, float], skip: list[str], tuning: Tuning
) -> dict[int, float]:
    """The bm25 scores of the expansion terms the best hits share (none past their budget)."""
    top = sorted(scores, key=scores.__getitem__, reverse=True)[: tuning.feedback_docs]
    extra = _expansion(list((await index.rows(top)).values()), skip, tuning.feedback_terms)
    extra = await _affordable(index, extra, tuning.feedback_postings, least=0)
    return await _bm25(index, extra, tuning, tuning.feedback_postings) if extra else {}


def _boost(
    scores: dict[int, float],
    speakers: dict[int, tuple[int, str, str]],
    wanted: set[str],
    weight: float,
) -> None:
    """Raise by `weight` the scores of the rows whose speaker (name or role) is wanted."""
    for r in scores:
        found = speakers.get(r)
        if found is not None and wanted.intersection(_who(found[1], found[2])):
            scores[r] *= 1 + weight


def best(scores: dict[int, float], k: int) -> list[int]:
    """The `k` best rowids, best first (ties in the order found)."""
    return sorted(scores, key=scores.__getitem__, reverse=True)[:k]


async def search(
    index: RecallIndex, query: str, k: int = 10, tuning: Tuning = DEFAULT
) -> list[Hit]:
    """The best `k` (at most MAX_K) messages for `query`, best first."""
    k = max(1, min(k, MAX_K))
    ranked = await rank(index, query, tuning)
    top = best(ranked, k)
    rows = await index.rows(top)
    return [Hit(rows[r], ranked[r]) for r in top if r in rows]


@lru_cache(maxsize=1024)
def _who(role: str, name: str) -> frozenset[str]:
    return frozenset(who_terms(role, name).split())


def _with_context(
    scores: dict[int, float], speakers: dict[int, tuple[int, str, str]], t: Tuning
) -> dict[int, float]:
    """Each score plus `context` x the scores of its conversation's nearby rows, plus
    `session` x the best score in its conversation."""
    if t.context <= 0 and t.session <= 0:
        return scores
    conv = {r: speakers[r][0] for r in scores}
    best: dict[int, float] = {}
    for r, s in scores.items():
        best[conv[r]] = max(best.get(conv[r], 0.0), s)
    out: dict[int, float] = {}
    for r, s in scores.items():
        near = 0.0
        for d in range(1, t.window + 1):
            for n in (r - d, r + d):
                if conv.get(n) == conv[r]:
                    near += scores[n] / d
        out[r] = s + t.context * near + t.session * best[conv[r]]
    return out
