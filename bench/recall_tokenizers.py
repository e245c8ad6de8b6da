"""Tokenisers for the recall index, measured on the dev split in one run (the choice's basis).

Plain BM25 (bm25 over a contentless FTS5 table, no context, no feedback) with
four ways to cut words: unicode61 as is (the baseline), FTS5's built-in
Porter stemmer with diacritics folded, roost's Snowball EN/DE stems with stop
words out (`bridge.recall.terms`), and the trigram tokenizer (substrings,
the usual answer to German compounds). Prints evidence recall@5/@10 and the
FTS5 index's size against the text it indexes.

Run: .venv/bin/python -m bench.recall_tokenizers [--quick] (one conversation)
"""

from __future__ import annotations

import itertools
import sqlite3
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from bridge.recall.evaluate import DEV_DIR, Scores, load_set
from bridge.recall.match import any_of
from bridge.recall.terms import ENGLISH_STOP, STOP, index_terms, query_terms, words

Variant = tuple[str, Callable[[str], str], Callable[[str], list[str]]]
VARIANTS: dict[str, Variant] = {
    "unicode61 (baseline)": (
        "unicode61",
        lambda t: t,
        lambda q: [w for w in words(q) if w not in ENGLISH_STOP],
    ),
    "porter + remove_diacritics 2": (
        "porter unicode61 remove_diacritics 2",
        lambda t: t,
        lambda q: [w for w in words(q) if w not in STOP],
    ),
    "snowball EN/DE + stop words (roost)": (
        "unicode61 remove_diacritics 2",
        index_terms,
        query_terms,
    ),
    "trigram": (
        "trigram",
        lambda t: t,
        lambda q: [w for w in words(q) if w not in STOP and len(w) >= 3],
    ),
}


def measure(
    tokenize: str, doc: Callable[[str], str], query: Callable[[str], list[str]], sets: int | None
) -> str:
    scores, size, text = Scores(), 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, messages, questions in itertools.islice(load_set(DEV_DIR), sets):
            path = Path(tmp) / f"{name}.sqlite"
            conn = sqlite3.connect(path)
            conn.execute(
                f"CREATE VIRTUAL TABLE m USING fts5(body, content='', tokenize='{tokenize}')"
            )
            conn.executemany(
                "INSERT INTO m (rowid, body) VALUES (?, ?)",
                [(i, doc(m.text)) for i, m in enumerate(messages)],
            )
            conn.commit()
            size += path.stat().st_size
            text += sum(len(m.text.encode()) for m in messages)
            for q in questions:
                expr = any_of(query(str(q["q"])))
                sql = "SELECT rowid FROM m WHERE m MATCH ? ORDER BY bm25(m) LIMIT 10"
                rows = [messages[r[0]].msg_id for r in conn.execute(sql, (expr,))] if expr else []
                scores.add(int(q["category"]), {str(e) for e in q["evidence"]}, rows)  # type: ignore[attr-defined, call-overload]
            conn.close()
    return f"@5 {scores.mean(5):.3f}  @10 {scores.mean(10):.3f}  index {size / text:.2f}x the text"


def main() -> int:
    if not DEV_DIR.is_dir():  # the dev split lives beside the repository, not in it
        print(f"skipped: no dev set at {DEV_DIR}")
        return 0
    sets = 1 if "--quick" in sys.argv[1:] else None  # one conversation (CI: it still runs)
    for label, (tokenize, doc, query) in VARIANTS.items():
        print(f"{label:40s} {measure(tokenize, doc, query, sets)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
