"""`roost import`'s own path, timed: JSONL parsing, screen, vault mask, stems, FTS5, facts.

Builds a JSONL export of N messages from the dev set (`recall_bench.synthetic`:
words shuffled, fresh conversations; deterministic) and imports it with
`import_stream` and the CLI's indexer (the secret screen, the tenant vault's
masker), twice in the same run: with the mask looked up once per batch (now)
and once per message (before). Prints messages per CPU second and per wall
second, the index's size against the text it holds, and the dev split's
evidence recall@5/@10 (the import's changes must not lower it; 0.656/0.750
before). On a shared machine the CPU figure is what one free core would do.

Run: .venv/bin/python -m bench.recall_import [--count 100000 | --quick]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.recall_bench import synthetic
from bridge.app.database import open_database
from bridge.loadout.vault import Vault
from bridge.recall.evaluate import DEV_DIR, Report, load_set, retrieval_eval
from bridge.recall.importer import import_stream
from bridge.recall.index import Message
from bridge.recall.indexer import Indexer
from bridge.recall.wiring import vault_mask
from bridge.screening.screen import secret_kinds
from bridge.types.audit_sink import NullAudit
from bridge.types.tenant_dirs import TenantDirs

BEFORE = (0.656, 0.750)  # dev recall@5/@10 before these changes (docs/architecture.md)


def export(messages: list[Message]) -> bytes:
    out = io.BytesIO()
    for m in messages:
        at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(m.at_ms / 1000))
        row = {"conversation": m.conversation, "id": m.msg_id, "role": m.role}
        row |= {"name": m.name, "text": m.text, "time": at}
        out.write((json.dumps(row) + "\n").encode())
    return out.getvalue()


def run(data: bytes, count: int, per_batch: bool) -> tuple[float, float, float]:
    """(messages per CPU second of the process, every thread; per wall second; roost.db's
    bytes / text bytes)."""
    return asyncio.run(_run(data, count, per_batch))


async def _run(data: bytes, count: int, per_batch: bool) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        dirs = TenantDirs.of(Path(tmp), "bench").ensure()
        masker_of = Vault(NullAudit()).masker
        mask = vault_mask(masker_of) if per_batch else (lambda d, t: masker_of(d).mask(t))
        path = Path(tmp) / "roost.db"
        db: Any = await open_database(path)
        indexer = Indexer(db, mask, screen=secret_kinds)
        cpu, wall = time.process_time(), time.perf_counter()
        summary = await import_stream(indexer, dirs, "jsonl", io.BytesIO(data))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        assert summary.messages == count, summary.lines()
        index = await indexer.index(dirs)
        await db.write(lambda c: c.execute("PRAGMA wal_checkpoint(TRUNCATE)"))
        ratio = path.stat().st_size / await index.text_bytes()
        await db.aclose()
    return count / cpu, count / wall, ratio


async def _report() -> Report:
    with tempfile.TemporaryDirectory() as tmp:
        db = await open_database(Path(tmp) / "roost.db")
        try:
            return await retrieval_eval(db, DEV_DIR)
        finally:
            await db.aclose()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="2,000 messages (CI)")
    args = parser.parse_args()
    if args.quick:
        args.count = 2_000
    if not DEV_DIR.is_dir():  # the dev split lives beside the repository, not in it
        print(f"skipped: no dev set at {DEV_DIR}")
        return 0
    sets = load_set(DEV_DIR)
    report = asyncio.run(_report())
    print(
        f"dev recall@5/@10: {report.roost.mean(5):.3f}/{report.roost.mean(10):.3f} "
        f"(before: {BEFORE[0]:.3f}/{BEFORE[1]:.3f}); plain BM25 @10 {report.bm25.mean(10):.3f}"
    )
    base = [m for _, messages, _ in sets for m in messages]
    data = export(synthetic(base, args.count))
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    for label, per_batch in (("mask per message (before)", False), ("mask per batch (now)", True)):
        cpu_rate, wall_rate, ratio = run(data, args.count, per_batch)
        print(
            f"{args.count:,} messages, {label}: {cpu_rate:,.0f} msg per CPU second, "
            f"{wall_rate:,.0f} per wall second; index {ratio:.2f}x the text"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
