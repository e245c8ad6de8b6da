"""Evidence recall of the search on a LoCoMo-style set, next to plain BM25, in one run.

A set is a directory of `conv-N.jsonl` (the import format) and
`questions-N.jsonl` (`{"q", "evidence": [ids], "category"}`). Each
conversation is imported into its own index (a tenant of its own in the
`Database` the caller passes: a fresh one, `bridge.app.database`), every
question searched with roost's search and with the baseline, plain Okapi
BM25 over whole messages (FTS5 unicode61, no stemming, English stop words
out: the floor), and evidence recall@k — the share of a question's evidence
ids among the first k hits — averaged per category and overall.
`leave_one_out` scores each conversation with nothing tuned on it by
construction (the tuning is fixed in `search.Tuning`); it reports the
per-conversation spread, the honest check against overfitting one set.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bridge.recall.embedder import pack
from bridge.recall.formats import read_jsonl
from bridge.recall.hybrid import Fusion, hybrid_search
from bridge.recall.index import Message, RecallIndex
from bridge.recall.match import any_of
from bridge.recall.search import Tuning, best, search
from bridge.recall.terms import ENGLISH_STOP, words
from bridge.recall.vectors import Dense, store
from bridge.storage.protocol import Database

_ROOT = Path(__file__).resolve().parents[2]
# shared/ lies beside the clone (CI) or beside the folder of work trees
DEV_DIR = (
    next(
        (p for p in (_ROOT.parent / "shared", _ROOT.parent.parent / "shared") if p.is_dir()),
        _ROOT.parent / "shared",
    )
    / "eval"
    / "locomo-dev"
)
CATEGORIES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "knowledge-upd",  # roost's own cases (bench/longmem): the newest statement of a fact
    6: "temporal-own",  # roost's own cases: when, which first, how long between
}
OWN_DIR = _ROOT / "bench" / "longmem"  # roost's own LongMemEval-style cases (a checkout only)
KS = (5, 10)

Ranker = Callable[[str, int], list[str]]  # query, k -> message ids, best first


@dataclass
class Scores:
    """Per (category, k): the recall of each question."""

    per: dict[tuple[int, int], list[float]] = field(default_factory=lambda: defaultdict(list))

    def add(self, category: int, evidence: set[str], ranked: list[str]) -> None:
        for k in KS:
            self.per[(category, k)].append(len(evidence & set(ranked[:k])) / len(evidence))

    def mean(self, k: int, category: int | None = None) -> float:
        values = [
            v for (c, kk), vs in self.per.items() if kk == k and category in (None, c) for v in vs
        ]
        return sum(values) / len(values) if values else 0.0

    def count(self, category: int | None = None) -> int:
        return sum(
            len(vs) for (c, k), vs in self.per.items() if k == KS[0] and category in (None, c)
        )


@dataclass
class Report:
    roost: Scores
    bm25: Scores
    by_conversation: dict[str, tuple[float, float]]  # name -> (roost@10, bm25@10)


class PlainBm25:
    """The baseline: whole messages, unicode61 without stemming, English stop words out."""

    def __init__(self, messages: list[Message]) -> None:
        self.conn = sqlite3.connect(":memory:")
        self.conn.execute("CREATE VIRTUAL TABLE m USING fts5(id UNINDEXED, text)")
        self.conn.executemany(
            "INSERT INTO m (id, text) VALUES (?, ?)", [(x.msg_id, x.text) for x in messages]
        )

    def __call__(self, query: str, k: int) -> list[str]:
        expr = any_of(w for w in words(query) if w not in ENGLISH_STOP)
        if not expr:
            return []
        sql = "SELECT id FROM m WHERE m MATCH ? ORDER BY bm25(m) LIMIT ?"
        return [r[0] for r in self.conn.execute(sql, (expr, k))]


def load_set(folder: Path) -> list[tuple[str, list[Message], list[dict[str, object]]]]:
    """(name, messages, questions) per conversation of the set, in name order."""
    out = []
    for conv in sorted(folder.glob("conv-*.jsonl")):
        name = conv.stem.removeprefix("conv-")
        with conv.open("rb") as f:
            messages = [m for m in read_jsonl(f) if isinstance(m, Message)]
        qfile = folder / f"questions-{name}.jsonl"
        questions = [json.loads(line) for line in qfile.read_text("utf-8").splitlines() if line]
        out.append((name, messages, questions))
    return out


def eval_tenant(folder: Path, name: str) -> str:
    """The tenant a set's conversation is imported as (a tenant id: letters, digits, '-')."""
    return "eval-" + "".join(c if c.isalnum() else "-" for c in f"{folder.name}-{name}")


async def loaded(db: Database, folder: Path, name: str, messages: list[Message]) -> RecallIndex:
    """The conversation's index in `db`, its messages added (once: a re-run adds nothing)."""
    index = RecallIndex(db, eval_tenant(folder, name))
    await index.add(messages)
    return index


async def retrieval_eval(db: Database, folder: Path, tuning: Tuning | None = None) -> Report:
    roost, bm25, by_conv = Scores(), Scores(), {}
    for name, messages, questions in load_set(folder):
        index = await loaded(db, folder, name, messages)
        base = PlainBm25(messages)
        mine, theirs = Scores(), Scores()
        for q in questions:
            evidence = {str(e) for e in q["evidence"]}  # type: ignore[attr-defined]
            category = int(q["category"])  # type: ignore[call-overload]
            query = str(q["q"])
            found = await search(index, query, max(KS), tuning or Tuning())
            hits = [h.row.msg_id for h in found]
            ranked = base(query, max(KS))
            for scores, got in ((roost, hits), (mine, hits), (bm25, ranked), (theirs, ranked)):
                scores.add(category, evidence, got)
        by_conv[name] = (mine.mean(10), theirs.mean(10))
        base.conn.close()
    return Report(roost, bm25, by_conv)


def format_report(report: Report) -> str:
    lines = ["category          n   roost@5 roost@10   bm25@5 bm25@10"]
    for cat, label in [*CATEGORIES.items(), (None, "all")]:
        r, b = report.roost, report.bm25
        if not r.count(cat):
            continue  # a category the set does not have
        lines.append(
            f"{label:<15} {r.count(cat):>4}   {r.mean(5, cat):.3f}   {r.mean(10, cat):.3f}"
            f"    {b.mean(5, cat):.3f}   {b.mean(10, cat):.3f}"
        )
    lines.append(
        "per conversation (recall@10, roost vs bm25): "
        + ", ".join(f"{n} {a:.3f}/{b:.3f}" for n, (a, b) in report.by_conversation.items())
    )
    return "\n".join(lines)


Embed = Callable[[list[str]], list[list[float]]]  # texts -> vectors (the bench's models)


@dataclass
class DenseReport:
    dense: Scores
    hybrid: Scores
    roost: Scores
    bm25: Scores
    by_conversation: dict[str, tuple[float, float, float]]  # name -> dense, hybrid, roost @10


async def dense_eval(
    db: Database,
    folder: Path,
    embed: Embed,
    fusion: Fusion | None = None,
    tuning: Tuning | None = None,
    embed_query: Embed | None = None,
) -> DenseReport:
    """Evidence recall of the vectors alone, of the RRF hybrid, of roost and of plain BM25.

    `embed_query`: how questions are embedded when a model tells them from passages."""
    report = DenseReport(Scores(), Scores(), Scores(), Scores(), {})
    for name, messages, questions in load_set(folder):
        index = await loaded(db, folder, name, messages)
        stored = [r async for r in index.iter_all()]
        texts = {(r.conversation, r.msg_id): r.rowid for r in stored}
        vectors = embed([m.text for m in messages])
        pairs = [
            (texts[(m.conversation, m.msg_id)], pack(v))
            for m, v in zip(messages, vectors, strict=True)
            if (m.conversation, m.msg_id) in texts
        ]
        await store(db, index.tenant, pairs)
        dense = Dense()
        await dense.refresh(db, index.tenant)
        base = PlainBm25(messages)
        mine = (Scores(), Scores(), Scores())
        qvecs = (embed_query or embed)([str(q["q"]) for q in questions])
        rows = {r.rowid: r for r in stored}
        for q, qv in zip(questions, qvecs, strict=True):
            evidence = {str(e) for e in q["evidence"]}  # type: ignore[attr-defined]
            cat, query = int(q["category"]), str(q["q"])  # type: ignore[call-overload]
            near = dense.nearest(qv, 100)
            t, f = tuning or Tuning(), fusion or Fusion()
            got = {
                "dense": [rows[r].msg_id for r in best(near, max(KS))],
                "hybrid": [
                    h.row.msg_id for h in await hybrid_search(index, query, near, max(KS), t, f)
                ],
                "roost": [h.row.msg_id for h in await search(index, query, max(KS), t)],
            }
            report.dense.add(cat, evidence, got["dense"])
            report.hybrid.add(cat, evidence, got["hybrid"])
            report.roost.add(cat, evidence, got["roost"])
            report.bm25.add(cat, evidence, base(query, max(KS)))
            for scores, key in zip(mine, ("dense", "hybrid", "roost"), strict=True):
                scores.add(cat, evidence, got[key])
        report.by_conversation[name] = (mine[0].mean(10), mine[1].mean(10), mine[2].mean(10))
        base.conn.close()
    return report


def format_dense(report: DenseReport) -> str:
    lines = [
        "category          n   dense@5 dense@10  hybrid@5 hybrid@10"
        "  roost@5 roost@10  bm25@5 bm25@10"
    ]
    for cat, label in [*CATEGORIES.items(), (None, "all")]:
        cells = "".join(
            f"   {s.mean(5, cat):.3f}   {s.mean(10, cat):.3f} "
            for s in (report.dense, report.hybrid, report.roost, report.bm25)
        )
        lines.append(f"{label:<15} {report.roost.count(cat):>4}{cells}")
    lines.append(
        "per conversation @10 (dense / hybrid / roost): "
        + ", ".join(
            f"{n} {a:.3f}/{b:.3f}/{c:.3f}" for n, (a, b, c) in report.by_conversation.items()
        )
    )
    return "\n".join(lines)
