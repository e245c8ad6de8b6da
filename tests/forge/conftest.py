"""Shared fixtures: one real sandbox helper per test module (starting one costs
a `python -I` start-up), and a fresh workspace per test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from forge.layers import Layers
from forge.runner import SandboxRunner
from tests.waits import HANG_S


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def runner() -> AsyncIterator[SandboxRunner]:
    # a call's own time limit, as a hang guard: a test of the limit passes its own
    r = SandboxRunner(default_timeout_s=HANG_S, max_output=256 * 1024)
    await r.start()
    yield r
    await r.aclose()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def traced() -> AsyncIterator[SandboxRunner]:
    """A runner that keeps each call's stage timings (`stages()`, `faults()`)."""
    r = SandboxRunner(default_timeout_s=HANG_S, trace=True)
    await r.start()
    yield r
    await r.aclose()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def raw_python() -> AsyncIterator[SandboxRunner]:
    """Plain Python in the sandbox: no linter, no RestrictedPython (the other layers on)."""
    r = SandboxRunner(
        default_timeout_s=HANG_S, layers_for_tests=Layers(lint=False, restricted=False)
    )
    await r.start()
    yield r
    await r.aclose()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    return ws
