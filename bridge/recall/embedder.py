"""What recall needs from an embeddings model, and vectors as the index stores them.

`Embedder` is the seam: a `name` (the model, stored with the vectors so a new
model starts the vectors afresh) and `embed(texts)` -> one vector per text.
The OpenAI-compatible client (`bridge.llm.embeddings`, `[llm.embeddings]`)
and the test fakes implement it; recall never imports a network library.
A failure is an `EmbedError` (a short reason for logs, never the text).

Vectors are stored unit-length as little-endian float32 blobs (`pack`), so
the cosine of two is their dot product.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Protocol


class EmbedError(Exception):
    """The embeddings model could not embed; the message names why, never the texts."""


class Embedder(Protocol):
    name: str  # the model; vectors of another model are not comparable

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def unit(vector: Sequence[float]) -> list[float]:
    """The vector scaled to length 1 (a zero vector stays zero)."""
    norm = math.sqrt(math.fsum(x * x for x in vector))
    return [x / norm for x in vector] if norm > 0 else [0.0] * len(vector)


def pack(vector: Sequence[float]) -> bytes:
    """A unit-length float32 blob of `vector`."""
    return struct.pack(f"<{len(vector)}f", *unit(vector))


def unpack(blob: bytes) -> tuple[float, ...]:
    return struct.unpack(f"<{len(blob) // 4}f", blob)
