"""`roost recall` (search a tenant's past messages) and `roost recall-eval` (score the search).

`roost recall --tenant T [--k K] [--json] (QUERY | --batch FILE)`: the same
search as the model's `recall` tool. Without `--json`, dated excerpts with
the turns around each hit; with it, one object a line per query:
`{"query", "hits": [{"id", "conversation", "time", "role", "text", "score"}]}`,
best first (the DESIGN contract). `--batch FILE` reads one query a line (a file
that cannot be read: exit 2).
Each query is audited as `recall.searched` (counts only). The excerpts are
printed with their control characters replaced (`controls.shown`): stored
or imported text cannot drive the terminal; JSON escapes them anyway.

`roost recall-eval [--dir DIR] [--answer]` imports a LoCoMo-style dev set
(conv-N.jsonl + questions-N.jsonl) into a temporary home and prints evidence
recall@5/@10 per category next to plain BM25 (bridge.recall.evaluate); with
`--answer`, each question also goes through a full turn on the configured
model and a model judge grades the answer (needs a model).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

from bridge.app.channels_up import PLATFORMS
from bridge.app.database import open_database
from bridge.app.home import record_event
from bridge.channels.terminal.controls import shown
from bridge.cli.as_owner import denied_as
from bridge.cli.rows import tenant_arg
from bridge.cli.tenant_check import refused
from bridge.core.config import Settings
from bridge.llm.embeddings import embeddings_client
from bridge.loadout.mask import Masker
from bridge.loadout.vault import masker_of
from bridge.recall.evaluate import DEV_DIR, OWN_DIR, Report, format_report, retrieval_eval
from bridge.recall.index import RecallIndex, legacy_path
from bridge.recall.indexer import Indexer
from bridge.recall.search import MAX_K, Hit
from bridge.recall.service import Recall, when
from bridge.storage.protocol import Database
from bridge.types.tenant_dirs import TenantDirs


def recall_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tenant", type=tenant_arg, required=True, help="whose messages to search")
    p.add_argument("--k", type=int, default=5, help=f"hits per query (1-{MAX_K}, default 5)")
    p.add_argument("--json", action="store_true", help="one JSON object a line per query")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("query", nargs="?", help="words to look for")
    group.add_argument("--batch", type=Path, help="a file of queries, one a line")


def _hit(hit: Hit, mask: Masker) -> dict[str, object]:
    row = hit.row
    return {
        "id": row.msg_id,
        "conversation": row.conversation,
        "time": when(row.at_ms),
        "role": row.role,
        "text": mask.mask(row.text),
        "score": round(hit.score, 4),
    }


def run_recall(args: argparse.Namespace, settings: Settings) -> int:
    if not 1 <= args.k <= MAX_K:
        print(f"roost recall: --k must be 1 to {MAX_K}", file=sys.stderr)
        return 2
    if args.batch is not None:
        try:
            text = args.batch.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            owner = denied_as(args, settings.home) if isinstance(exc, PermissionError) else ""
            print(f"recall: cannot read {args.batch}: {why or exc}{owner}", file=sys.stderr)
            return 2
        queries = [q for q in text.splitlines() if q.strip()]
    else:
        queries = [args.query]
    dirs = TenantDirs.of(settings.home, args.tenant)
    return asyncio.run(_search_all(args, settings, dirs, queries))


async def _search_all(
    args: argparse.Namespace, settings: Settings, dirs: TenantDirs, queries: list[str]
) -> int:
    """Every query in one event loop (the embeddings client's session lives in it)."""
    db = await open_database(settings.home / "roost.db")
    try:
        if not legacy_path(dirs).exists() and not await RecallIndex(db, dirs.tenant).count():
            if refused(settings, args.tenant, "recall"):  # a typo, not an empty tenant
                return 2
            print(f"roost recall: tenant {args.tenant} has nothing indexed yet", file=sys.stderr)
            return 1 if not args.json else _empty(queries)
        return await _search(args, settings, db, dirs, queries)
    finally:
        await db.aclose()


async def _search(
    args: argparse.Namespace, settings: Settings, db: Database, dirs: TenantDirs, q: list[str]
) -> int:
    embedder = embeddings_client(settings.llm)  # the same search as the model's tool
    recall = Recall(Indexer(db), embedder=embedder)
    queries = q
    mask = masker_of(dirs)  # a value put in the vault after it was said, too (as /recall)
    try:
        for query in queries:
            found = await recall.find(dirs, query, args.k)
            await _audit(settings, args.tenant, len(query), args.k, len(found.hits), found.ms)
            if args.json:
                print(json.dumps({"query": query, "hits": [_hit(h, mask) for h in found.hits]}))
            else:
                print(f"# {shown(query)}")
                text = await recall.render(dirs, found.hits) if found.hits else "(nothing found)"
                print(shown(mask.mask(text)))
                print()
    finally:
        await recall.indexer.aclose()
        if embedder is not None:
            await embedder.aclose()
    return 0


def _empty(queries: list[str]) -> int:
    for query in queries:
        print(json.dumps({"query": query, "hits": []}))
    return 0


async def _audit(settings: Settings, tenant: str, chars: int, k: int, hits: int, ms: int) -> None:
    details: dict[str, object] = {
        "by": "operator",
        "k": k,
        "hits": hits,
        "query_chars": chars,
        "ms": ms,
    }
    await record_event(settings, "recall.searched", tenant, details, PLATFORMS)


async def _evaluated(folders: list[Path]) -> list[tuple[Report, Path]]:
    """Each set scored on a fresh `Database` in a temporary directory."""
    with tempfile.TemporaryDirectory() as tmp:
        db = await open_database(Path(tmp) / "roost.db")
        try:
            return [(await retrieval_eval(db, folder), folder) for folder in folders]
        finally:
            await db.aclose()


def eval_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dir",
        type=Path,
        help="the set: conv-N.jsonl + questions-N.jsonl (default: the LoCoMo dev set in "
        f"{DEV_DIR}, a shared/ folder beside the checkout; not shipped with roost)",
    )
    p.add_argument(
        "--own",
        type=Path,
        default=OWN_DIR,
        help="roost's own knowledge-update and temporal cases, reported separately",
    )
    p.add_argument("--answer", action="store_true", help="also answer each question (a model)")
    p.add_argument("--limit", type=int, default=0, help="--answer: at most N questions")


def run_recall_eval(args: argparse.Namespace, settings: Settings) -> int:
    if args.dir is None:
        args.dir = DEV_DIR
        if not DEV_DIR.is_dir():
            print(
                f"roost recall-eval: the default data set (LoCoMo dev) is not shipped with "
                f"roost and is not at {DEV_DIR} (a shared/eval/locomo-dev folder beside the "
                "checkout); pass --dir DIR, a folder of conv-N.jsonl and questions-N.jsonl",
                file=sys.stderr,
            )
            return 2
    if not args.dir.is_dir():
        print(f"roost recall-eval: {args.dir} is not a directory", file=sys.stderr)
        return 2
    own = args.own.is_dir() and args.own.resolve() != args.dir.resolve()
    for report, folder in asyncio.run(_evaluated([args.dir, *([args.own] if own else [])])):
        if folder is not args.dir:
            print(f"== own cases ({folder.name}: knowledge updates and time; see SOURCE.md)")
        print(format_report(report))
    if args.answer:
        if settings.llm.provider == "offline":
            print("roost recall-eval --answer: no model configured (ROOST_LLM__*)", file=sys.stderr)
            return 2
        from bridge.cli.recall_answer import answer_eval  # the composition root: only here

        score = asyncio.run(answer_eval(settings, args.dir, args.limit))
        print(score.line())
    return 0
