"""Helpers of the audit tests: a deterministic clock and a chain builder."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from bridge.audit import AuditChain

KEY = b"test-hmac-key-0123456789abcdef"

ChainFactory = Callable[..., Awaitable[Path]]


def fake_clock() -> Callable[[], float]:
    ticks = itertools.count()
    return lambda: 1_800_000_000.0 + next(ticks) * 0.25


@pytest.fixture
def make_chain(tmp_path: Path) -> ChainFactory:
    async def build(n: int = 20, key: bytes | None = None) -> Path:
        path = tmp_path / "home" / "audit" / "chain.jsonl"
        chain = AuditChain(path, key, fake_clock())
        async with chain:
            for i in range(n):
                await chain.emit(
                    "tool.called",
                    "alice" if i % 2 else "bob",
                    {"name": f"me.tool{i}", "ms": i, "outcome": "ok"},
                )
        return path

    return build
