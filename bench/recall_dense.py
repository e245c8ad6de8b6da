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

Run: MODELS_PATH=/path/to/models .venv/bin/python bench/recall_dense.py hashed wordllama static
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
if os.environ.get("MODELS_PATH"):  # models installed apart (pip --target): after our own pins
    sys.path.append(os.environ["MODELS_PATH"])

from bridge.recall.evaluate import DEV_DIR, dense_eval, format_dense, load_set
from bridge.recall.terms import index_terms

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


MODELS: dict[str, Callable[[], Embed]] = {
    "hashed": hashed,
    "wordllama": wordllama,
    "static": static,
}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="+", choices=sorted(MODELS))
    args = parser.parse_args()
    texts = [m.text for _, messages, _ in load_set(DEV_DIR) for m in messages]
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    for name in args.models:
        wall = time.perf_counter()
        embed = MODELS[name]()
        loaded = time.perf_counter() - wall
        wall, cpu = time.perf_counter(), time.process_time()
        vectors = embed(texts)
        per_wall = (time.perf_counter() - wall) * 1000 / len(texts)
        per_cpu = (time.process_time() - cpu) * 1000 / len(texts)
        print(
            f"== {name}: load {loaded:.2f} s, {per_wall:.3f} ms per message "
            f"({per_cpu:.3f} ms CPU), {len(vectors[0])} dimensions"
        )
        print(format_dense(dense_eval(DEV_DIR, embed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
