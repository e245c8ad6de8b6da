"""The runner's helpers, one per workspace (that is, per tenant), and a spare.

One tenant's requests, secrets and compiled tools never enter a process that
runs another tenant's calls, so even a total break of the tool language and of
the child's confinement reaches only that tenant's own data. Up to
`max_helpers` run at once; beyond that the least recently used idle one is
closed. `start()` starts one pristine spare helper; the first new workspace
takes it. A dead helper is replaced on the next call to its workspace.
"""

from __future__ import annotations

import asyncio
import os
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path

from forge.helper_process import HelperProcess

MAX_HELPERS = 8


def workspace_key(workspace: str | os.PathLike[str]) -> str:
    """The isolation key of a call: its workspace, as spelled (pure, no I/O). Two
    spellings of one directory only cost a second helper; two tenants never share
    a workspace, so never a helper."""
    return os.path.normpath(os.fspath(workspace))


class HelperPool:
    def __init__(
        self, spawn: Callable[[], Awaitable[HelperProcess]], max_helpers: int = MAX_HELPERS
    ) -> None:
        self._spawn = spawn
        self.max_helpers = max(1, max_helpers)
        self._helpers: OrderedDict[str, HelperProcess] = OrderedDict()  # key -> its helper
        self._spare: HelperProcess | None = None  # pristine; the next new workspace takes it
        self._lock = asyncio.Lock()
        self._closed = False

    async def start(self) -> None:
        """Start the spare helper, unless one already runs."""
        async with self._lock:
            if self._spare is None and not self._helpers:
                self._spare = await self._spawn()

    def known(self, workspace: Path | None) -> HelperProcess | None:
        """`workspace`'s helper, if it has one (None: the one used last, or the spare)."""
        if workspace is not None:
            return self._helpers.get(workspace_key(workspace))
        if self._helpers:
            return next(reversed(self._helpers.values()))
        return self._spare

    async def get(self, key: str) -> HelperProcess:
        """The live helper of workspace `key`, started (or taken from the spare) if needed."""
        helper = self._helpers.get(key)
        if helper is not None and not helper.dead and not self._closed:
            self._helpers.move_to_end(key)
            return helper
        async with self._lock:
            if self._closed:
                raise RuntimeError("runner is closed")
            helper = self._helpers.get(key)
            if helper is None or helper.dead:
                spare, self._spare = self._spare, None
                helper = spare if spare is not None and not spare.dead else await self._spawn()
                self._helpers[key] = helper
                self._evict()
            self._helpers.move_to_end(key)
            return helper

    def _evict(self) -> None:
        """Close the least recently used idle helpers beyond `max_helpers`."""
        extra = len(self._helpers) - self.max_helpers
        for key in list(self._helpers):
            if extra <= 0:
                return
            helper = self._helpers[key]
            if not helper.pending:
                del self._helpers[key]
                helper.close()
                extra -= 1

    def count(self) -> int:
        """Helpers running for workspaces (the spare not counted)."""
        return sum(1 for h in self._helpers.values() if not h.dead)

    async def aclose(self) -> None:
        """Shut every helper; later calls raise RuntimeError."""
        async with self._lock:
            self._closed = True
            helpers = [*self._helpers.values(), *([self._spare] if self._spare else [])]
            self._helpers.clear()
            self._spare = None
        await asyncio.gather(*(h.shut() for h in helpers))
