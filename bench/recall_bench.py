"""Recall figures in one run: quality on the dev split, import speed, index size, query latency.

1. Evidence recall@5/@10 per LoCoMo category on `shared/eval/locomo-dev/`,
   roost's search next to plain BM25 over whole messages (same run).
2. Leave one conversation out: the context window, session, speaker and
   feedback weights are picked on two conversations from a small grid and
   scored on the third, so the figure never saw its own conversation (the
   generalisation check).
3. Import speed (messages/s through the Indexer: screen, mask, stem, the
   rows and the text index of the `Database`, here SQLite's roost.db),
   index size (roost.db after a checkpoint) against the text it holds,
   and one query's latency p50/p99 at
   10k and at 1M messages (synthetic: the dev messages repeated with
   shuffled words and fresh conversation ids; `--quick`, for CI, runs 2k
   messages and no leave-one-out). Latency is timed over the dev questions,
   one thread; wall time and
   the thread's CPU time are both printed (on a shared machine the CPU time
   is what one free core would take).

Run: .venv/bin/python -m bench.recall_bench [--quick] [--big 1000000] [--cache /tmp/recall]
[--postgres] (`--postgres`: the dev table again on a throwaway PostgreSQL server)
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bridge.app.database import open_database
from bridge.recall.evaluate import DEV_DIR, format_report, load_set, retrieval_eval
from bridge.recall.index import Message, RecallIndex
from bridge.recall.indexer import Indexer
from bridge.recall.search import Tuning, search
from bridge.screening.screen import secret_kinds
from bridge.storage.postgres import PostgresDatabase
from bridge.storage.schema import MIGRATIONS
from bridge.types.tenant_dirs import TenantDirs
from tests.storage.pg_server import NoPostgres, start_server

GRID = [
    Tuning(context=0.5, window=w, session=s, speaker=p, feedback=f)
    for w, s, p, f in itertools.product((1, 2), (0.3, 0.5), (0.3, 0.6), (0.0, 0.1))
]


async def leave_one_out() -> list[tuple[str, float, float]]:
    """(held-out conversation, its recall@10 with weights picked on the others, default's)."""
    names = [name for name, _, _ in load_set(DEV_DIR)]
    per_conv = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = await open_database(Path(tmp) / "roost.db")  # each conversation imported once
        try:
            for tuning in [*GRID, Tuning()]:
                report = await retrieval_eval(db, DEV_DIR, tuning)
                per_conv[tuning] = {n: v[0] for n, v in report.by_conversation.items()}
        finally:
            await db.aclose()
    out = []
    for held in names:
        others = [n for n in names if n != held]
        best = max(GRID, key=lambda t: sum(per_conv[t][n] for n in others))
        out.append((held, per_conv[best][held], per_conv[Tuning()][held]))
    return out


def synthetic(base: list[Message], count: int, seed: int = 7) -> list[Message]:
    """`count` messages made from the dev messages: words shuffled, new conversations."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        m = base[i % len(base)]
        words = m.text.split()
        rng.shuffle(words)
        conv = f"synthetic-{i // 400}"
        at = 1_600_000_000_000 + i * 60_000
        out.append(Message(conv, f"s{i}", m.role, " ".join(words), at, "bench", m.name))
    return out


async def build(indexer: Indexer, dirs: TenantDirs, messages: list[Message]) -> tuple[float, float]:
    """Import through the indexer's door in batches of 5,000: messages per second of wall
    time and per second of the process's CPU time (every thread: the database's too)."""
    wall, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(messages), 5000):
        await indexer.admit(dirs, messages[start : start + 5000])
    n = len(messages)
    return n / (time.perf_counter() - wall), n / (time.process_time() - cpu)


async def size_figures(db: Any, path: Path, index: RecallIndex) -> tuple[int, int]:
    """roost.db's size after a checkpoint (the index is most of it here) and the text's."""
    await db.write(lambda c: c.execute("PRAGMA wal_checkpoint(TRUNCATE)"))
    return path.stat().st_size, await index.text_bytes()  # noqa: ASYNC240 (a stat)


async def latency(index: RecallIndex, queries: list[str]) -> list[float]:
    """p50 and p99 of one query in ms, wall time then CPU time of the process (every
    thread; the machine is shared)."""
    walls, cpus = [], []
    for q in queries:
        wall, cpu = time.perf_counter(), time.process_time()
        await search(index, q, 10)
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    out = []
    for times in (walls, cpus):
        times.sort()
        out += [statistics.median(times), times[int(len(times) * 0.99) - 1]]
    return out


def scale(base: list[Message], queries: list[str], count: int, cache: Path | None = None) -> None:
    """Import `count` synthetic messages, then size and latency. With `cache`, the index
    is built once under `cache/<count>/` and reused by later runs (a 1M build takes a
    while): a reused index prints no import figure."""
    asyncio.run(_scale(base, queries, count, cache))


async def _scale(base: list[Message], queries: list[str], count: int, cache: Path | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = cache / str(count) if cache is not None else Path(tmp)
        dirs = TenantDirs.of(home, "bench").ensure()
        done = home / "built"
        db = await open_database(home / "roost.db")
        indexer = Indexer(db, lambda d, text: text, screen=secret_kinds)  # an empty vault
        try:
            if done.exists():
                imported = "import reused"
            else:
                rate, cpu_rate = await build(indexer, dirs, synthetic(base, count))
                imported = f"import {rate:,.0f} msg/s ({cpu_rate:,.0f} per CPU second)"
                if cache is not None:
                    done.write_text(f"{count}\n")
            index = await indexer.index(dirs)
            size, text = await size_figures(db, home / "roost.db", index)
            p50, p99, c50, c99 = await latency(index, queries)
        finally:
            await indexer.aclose()
            await db.aclose()
        print(
            f"{count:>9,} messages: {imported}; "
            f"index {size / 1e6:,.1f} MB for {text / 1e6:,.1f} MB of text ({size / text:.2f}x); "
            f"query p50 {p50:.1f} ms, p99 {p99:.1f} ms (CPU: {c50:.1f} / {c99:.1f} ms); "
            f"load {os.getloadavg()[0]:.1f}"
        )


async def _quality_report(url: str | None = None) -> str:
    """The dev split's table on a fresh SQLite roost.db, or on the PostgreSQL at `url`."""
    with tempfile.TemporaryDirectory() as tmp:
        db: Any
        if url is None:
            db = await open_database(Path(tmp) / "roost.db")
        else:
            db = await PostgresDatabase.open(url)
            await db.migrate(MIGRATIONS)
        try:
            return format_report(await retrieval_eval(db, DEV_DIR))
        finally:
            await db.aclose()


def on_postgres() -> None:
    """The dev split's table again on a throwaway PostgreSQL (the same ranking contract)."""
    try:
        server = start_server()
    except NoPostgres as exc:
        print(f"== PostgreSQL: skipped ({exc})")
        return
    try:
        print("== evidence recall on the dev split, on PostgreSQL (tsvector)")
        print(asyncio.run(_quality_report(server.url())))
    finally:
        server.stop()


def quality(quick: bool = False) -> None:
    print("== evidence recall on the dev split (roost vs plain BM25, same run)")
    print(asyncio.run(_quality_report()))
    if quick:
        return
    print("== leave one conversation out (weights picked on the other two)")
    for held, picked, default in asyncio.run(leave_one_out()):
        print(
            f"conversation {held}: recall@10 {picked:.3f} (picked elsewhere), {default:.3f} default"
        )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="2k messages, no leave-one-out (CI)")
    parser.add_argument("--big", type=int, default=1_000_000)
    parser.add_argument(
        "--scale-only", action="store_true", help="only import, size and latency figures"
    )
    parser.add_argument(
        "--cache", type=Path, help="build each scale's index once under this folder and reuse it"
    )
    parser.add_argument(
        "--postgres", action="store_true", help="the dev table on a throwaway PostgreSQL too"
    )
    args = parser.parse_args()
    if not DEV_DIR.is_dir():  # the dev split lives beside the repository, not in it
        print(f"skipped: no dev set at {DEV_DIR}")
        return 0
    if not args.scale_only:
        quality(args.quick)
        if args.postgres:
            on_postgres()
    sets = load_set(DEV_DIR)
    base = [m for _, messages, _ in sets for m in messages]
    queries = [str(q["q"]) for _, _, questions in sets for q in questions]
    print("== import, size, latency (synthetic corpus from the dev messages)")
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    for count in (2_000,) if args.quick else (10_000, args.big):
        scale(base, queries, count, args.cache)
    return 0


if __name__ == "__main__":
    sys.exit(main())
