"""The runner's helpers, one per workspace (that is, per tenant), and a spare.

One tenant's requests, secrets and compiled tools never enter a process that
runs another tenant's calls, so even a total break of the tool language and of
the child's confinement reaches only that tenant's own data. Up to
`max_helpers` run at once; beyond that the least recently used idle one is
closed. `start()` starts one pristine spare helper; the next new workspace
takes it, and a new spare starts at once in the background, so the first call
of a new tenant does not wait for a helper's start-up (unless tenants arrive
faster than helpers start: then it waits for the spare already starting). The
spare belongs to no workspace, so it is never reaped as idle. A dead helper is
replaced on the next call to its workspace.

With `idle_s`, a reaper closes the helper of a workspace that had no call for
`idle_s` seconds (its zygote and waiting children go with it); the next call
to that workspace starts a new one. The clock and the reaper's wait between
checks are injected (time.monotonic and asyncio.sleep by default).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from contextlib import suppress
from pathlib import Path

from forge.helper_process import HelperProcess

log = logging.getLogger(__name__)
MAX_HELPERS = 8
Clock = Callable[[], float]
Tick = Callable[[float], Awaitable[object]]  # waits (about) that many seconds


def workspace_key(workspace: str | os.PathLike[str]) -> str:
    """The isolation key of a call: its workspace, as spelled (pure, no I/O). Two
    spellings of one directory only cost a second helper; two tenants never share
    a workspace, so never a helper."""
    return os.path.normpath(os.fspath(workspace))


class HelperPool:
    def __init__(
        self,
        spawn: Callable[[], Awaitable[HelperProcess]],
        max_helpers: int = MAX_HELPERS,
        *,
        idle_s: float | None = None,
        clock: Clock = time.monotonic,
        tick: Tick = asyncio.sleep,
    ) -> None:
        """`idle_s`: close a workspace's helper after that many seconds without a
        call (None or 0: never)."""
        self._spawn = spawn
        self.max_helpers = max(1, max_helpers)
        self.idle_s = idle_s or None
        self._clock = clock
        self._tick = tick
        self._reaper: asyncio.Task[None] | None = None
        self._shutting: set[asyncio.Task[None]] = set()  # idle helpers being shut
        self._used: dict[str, float] = {}  # key -> when its last call began or ended
        self._leases: dict[str, int] = {}  # key -> calls between get() and release()
        self._helpers: OrderedDict[str, HelperProcess] = OrderedDict()  # key -> its helper
        # pristine, started or starting; the next new workspace takes it
        self._spare: asyncio.Future[HelperProcess] | None = None
        self._lock = asyncio.Lock()
        self._closed = False

    async def start(self) -> None:
        """Start the spare helper, unless one already runs, and wait until it runs."""
        self._start_reaper()
        async with self._lock:
            self._start_spare()
            spare = self._spare
        if spare is not None:
            await asyncio.shield(spare)

    def _start_spare(self) -> None:
        """Start a new spare helper in the background, unless one runs or starts."""
        if self._spare is None and not self._closed:
            self._spare = asyncio.ensure_future(self._spawn())
            self._spare.add_done_callback(_quiet)

    async def _take_spare(self) -> HelperProcess:
        """The spare helper (waiting for it if it is still starting), or a new one if
        it failed or died; then a new spare starts in the background."""
        spare, self._spare = self._spare, None
        helper = None
        if spare is not None:
            try:
                helper = await asyncio.shield(spare)
            except Exception:  # it failed to start: start one for this workspace
                log.warning("the spare sandbox helper failed to start")
        if helper is None or helper.dead:
            helper = await self._spawn()
        self._start_spare()
        return helper

    def known(self, workspace: Path | None) -> HelperProcess | None:
        """`workspace`'s helper, if it has one (None: the one used last, or the spare)."""
        if workspace is not None:
            return self._helpers.get(workspace_key(workspace))
        if self._helpers:
            return next(reversed(self._helpers.values()))
        return self.spare()

    def spare(self) -> HelperProcess | None:
        """The spare helper if it runs (None while it starts)."""
        spare = self._spare
        if spare is None or not spare.done() or spare.cancelled() or spare.exception():
            return None
        return spare.result()

    async def get(self, key: str) -> HelperProcess:
        """The live helper of workspace `key`, started (or taken from the spare) if
        needed, leased to one call until `release(key)`."""
        helper = await self._get(key)
        self._leases[key] = self._leases.get(key, 0) + 1
        self._used[key] = self._clock()
        return helper

    def release(self, key: str) -> None:
        """A call of workspace `key` is over: its helper's idle time starts now."""
        left = self._leases.get(key, 0) - 1
        if left > 0:
            self._leases[key] = left
        else:
            self._leases.pop(key, None)
        self._used[key] = self._clock()

    async def _get(self, key: str) -> HelperProcess:
        self._start_reaper()
        helper = self._helpers.get(key)
        if helper is not None and not helper.dead and not self._closed:
            self._helpers.move_to_end(key)
            return helper
        async with self._lock:
            if self._closed:
                raise RuntimeError("runner is closed")
            helper = self._helpers.get(key)
            if helper is None or helper.dead:
                helper = await self._take_spare()
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
                self._used.pop(key, None)
                helper.close()
                extra -= 1

    def reap_idle(self) -> list[str]:
        """Close the helpers idle for `idle_s` or longer (no call leased: a child
        that answered and is still being reaped does not count); their workspaces."""
        if self.idle_s is None:
            return []
        now = self._clock()
        gone = []
        for key, helper in list(self._helpers.items()):
            idle = now - self._used.get(key, now)
            if idle >= self.idle_s and not self._leases.get(key):
                del self._helpers[key]
                self._used.pop(key, None)
                task = asyncio.get_running_loop().create_task(helper.shut())
                self._shutting.add(task)
                task.add_done_callback(self._shutting.discard)
                gone.append(key)
        return gone

    def _start_reaper(self) -> None:
        if self.idle_s is not None and self._reaper is None and not self._closed:
            self._reaper = asyncio.get_running_loop().create_task(self._reap_loop())

    async def _reap_loop(self) -> None:
        assert self.idle_s is not None
        every = min(max(self.idle_s / 4, 0.05), 60.0)
        while True:
            await self._tick(every)
            closed = self.reap_idle()
            if closed:
                log.info("closed %d idle sandbox helper(s), %d left", len(closed), self.count())

    def count(self) -> int:
        """Helpers running for workspaces (the spare not counted)."""
        return sum(1 for h in self._helpers.values() if not h.dead)

    async def aclose(self) -> None:
        """Shut every helper; later calls raise RuntimeError."""
        if self._reaper is not None:
            self._reaper.cancel()
            with suppress(asyncio.CancelledError):
                await self._reaper
        async with self._lock:
            self._closed = True
            helpers = list(self._helpers.values())
            self._helpers.clear()
            spare, self._spare = self._spare, None
        if spare is not None:
            with suppress(Exception):
                helpers.append(await spare)
        await asyncio.gather(*(h.shut() for h in helpers), *self._shutting)


def _quiet(fut: asyncio.Future[HelperProcess]) -> None:
    """Mark a spare's failure as seen (it is reported when the spare is taken)."""
    if not fut.cancelled():
        fut.exception()
