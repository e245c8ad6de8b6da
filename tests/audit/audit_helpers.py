"""Helpers of the audit tests: a deterministic clock and a chain builder."""

from __future__ import annotations

import argparse
import io
import itertools
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from bridge.audit import AuditChain
from bridge.cli.audit import add_audit_parser, run_audit_command

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


def run(argv: list[str], home: Path, key_path: Path | None = None) -> tuple[int, str, str]:
    """`roost ARGV` through the real `audit` parser: (exit status, stdout, stderr)."""
    parser = argparse.ArgumentParser(prog="roost")
    add_audit_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    code = run_audit_command(args, home, key_path, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    """The HMAC key `KEY` in a file outside the audit directory."""
    path = tmp_path / "secrets" / "audit-hmac-key"
    path.parent.mkdir()
    path.write_bytes(KEY + b"\n")
    return path
