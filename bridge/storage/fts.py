"""Full-text search: the terms both backends index, their quoting, the ranking contract.

Terms: `terms(text)` folds case and compatibility forms (Unicode's compatibility
caseless match: casefold and NFKD, twice) and drops combining marks,
then takes the runs of letters and digits (`[^\\W_]+`), each cut to
MAX_TERM characters. Both backends index exactly these terms and look up
exactly these terms, so what a search finds does not depend on the backend.
A query is a list of terms meaning "any of them" (each run through `terms`
again: whatever a person or a model typed, FTS5's `AND OR NOT NEAR * ^ : ( )
+ "` and tsquery's `& | ! <-> : * ' \\ ( )` are never syntax — they are
dropped as separators or quoted as plain words).

Ranking: Okapi BM25 as SQLite's FTS5 `bm25()` computes it, over one tenant's
documents of one index: k1 = 1.2, b = 0.75, idf = ln((N - n + 0.5) / (n + 0.5))
floored at 1e-6, a document's length its number of terms. PostgreSQL computes
the same figure in SQL from per-document term counts and per-tenant totals.
Scores are positive (higher is better); hits come best first, rounded to
SCORE_DIGITS decimals, ties by the smaller document id, so both backends
return the same order.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

MAX_TERM = 64
MAX_QUERY_TERMS = 64
K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6
SCORE_DIGITS = 10
_WORD = re.compile(r"[^\W_]+")


def terms(text: str) -> list[str]:
    """The index terms of `text`, in order, repeats kept."""
    if text.isascii():  # every step below is lower() on ASCII (the recall index's terms)
        return [w[:MAX_TERM] for w in _WORD.findall(text.lower())]
    # Unicode's compatibility caseless match (D146): NFKD(casefold(NFKD(casefold(NFD(x))))).
    # One casefold before NFKD is not enough: a compatibility character can decompose
    # to a capital ('𝕊' -> 'S'), and a term must be its own term when searched again.
    once = unicodedata.normalize("NFKD", unicodedata.normalize("NFD", text).casefold())
    decomposed = unicodedata.normalize("NFKD", once.casefold())
    folded = "".join(c for c in decomposed if not unicodedata.combining(c))
    return [w[:MAX_TERM] for w in _WORD.findall(folded)]


def query_terms(given: Iterable[str]) -> list[str]:
    """The distinct terms of a query (each given string through `terms`), at most
    MAX_QUERY_TERMS, first seen first."""
    found: dict[str, None] = {}
    for piece in given:
        for term in terms(piece):
            found.setdefault(term, None)
    return list(found)[:MAX_QUERY_TERMS]


def counted(text: str) -> tuple[list[str], list[int], int]:
    """(distinct terms, how often each occurs, the number of terms): a document's row."""
    got = Counter(terms(text))
    return list(got), list(got.values()), sum(got.values())


def fts5_any(query: list[str]) -> str:
    """An FTS5 MATCH expression for "any of these terms": each a quoted string."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in query)


def tsquery_lexeme(term: str) -> str:
    """One tsquery lexeme literal: quoted, `'` and `\\` doubled (taken as written, no
    parser or dictionary in between)."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def tsquery_any(query: list[str]) -> str:
    return " | ".join(tsquery_lexeme(t) for t in query)
