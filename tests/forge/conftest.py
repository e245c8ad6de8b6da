"""Shared fixtures: one real sandbox runner per test module (starting a helper costs
a `python -I` start-up), and one workspace per module, emptied for each test."""

from __future__ import annotations

import shutil
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


class _Workspaces:
    """One workspace path per test module, so the module's runner starts its helper (one
    per workspace, as for a tenant) once, not once a test: a helper's start-up was most of
    a short test's CPU. Each test gets it empty, with nothing left beside it; a test that
    replaced the directory itself (its inode changed) gets a new path, and so a new helper."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self._factory = factory
        self._ws: Path | None = None
        self._ino = -1

    def fresh(self) -> Path:
        ws = self._ws
        if ws is None or ws.is_symlink() or not ws.is_dir() or ws.stat().st_ino != self._ino:
            return self._new()
        try:
            ws.chmod(0o755)
            for entry in [*ws.iterdir(), *(p for p in ws.parent.iterdir() if p != ws)]:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
        except OSError:  # left unremovable (modes a test set): a new one, as before
            return self._new()
        return ws

    def _new(self) -> Path:
        ws = self._ws = self._factory.mktemp("module") / "workspace"
        ws.mkdir()
        self._ino = ws.stat().st_ino
        return ws


@pytest.fixture(scope="module")
def _workspaces(tmp_path_factory: pytest.TempPathFactory) -> _Workspaces:
    return _Workspaces(tmp_path_factory)


@pytest.fixture
def workspace(_workspaces: _Workspaces) -> Path:
    """An empty workspace, the module's one (see `_Workspaces`)."""
    return _workspaces.fresh()
