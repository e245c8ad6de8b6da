"""Disk space per tenant: its workspace (uploads in `inbox/` included) and its exports (`out/`).

`TenantQuota(home, limit)` (`[quota] tenant_bytes`; 0: unlimited) answers
how much a tenant holds and may still write, cheaply: the first question
walks the tenant's two trees once (each inode once, symbolic links never
followed: a regular file's apparent size, and every file, folder and link at
least one block, `ENTRY_BYTES`: 17,515 empty files took inodes and blocks of
the disk while they counted nothing), and the figure is kept. What roost
writes or removes itself is added or taken off as it happens (`take`,
`charge`); anything else that writes there (a tool call, a job) is announced
with `invalidate(tenant)` (the turn observer does it after a turn that ran
tools), and a figure older than `ttl_s` is measured again, so a change no
one announced is seen within minutes while no message ever walks a tree.

Writers check before they write: `check(dirs, n)` raises `QuotaExceeded`
(with the figures, for a 507 or a reply) when `n` more bytes would pass the
limit; a stream that does not know its size takes its bytes as they come
(`take`) and gives them back if it is abandoned (`charge(dirs, -n)`).
`remaining(dirs)` is what may still be written (`UNLIMITED` without a
limit): the lead bounds a tool call's write budget by it. Thread-safe: an
export runs in a worker thread. On the event loop, `room` and `fits` are
`remaining` and `check` with a due walk on a worker thread.
"""

from __future__ import annotations

import asyncio
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bridge.types.file_tree import TreeChanged, walk
from bridge.types.tenant_dirs import TenantDirs

if TYPE_CHECKING:
    from bridge.core.agent import AgentResult
    from bridge.core.sessions import Session
    from bridge.types.audit_sink import TurnEvents
    from bridge.types.tools import TurnContext

UNLIMITED = 2**63 - 1
ENTRY_BYTES = 4096  # what a file, folder or link takes of the disk at least (a block)
TTL_S = 300.0
WALKS = 3  # walks of a tree that changes while it is measured


class QuotaExceeded(Exception):
    """`needed` more bytes would pass the tenant's limit; the text is for a person."""

    def __init__(self, used: int, limit: int, needed: int) -> None:
        self.used, self.limit, self.needed = used, limit, needed
        super().__init__(
            f"the storage quota is full: {size_text(used)} of {size_text(limit)} used "
            f"([quota] tenant_bytes), {size_text(needed)} more does not fit"
        )


def size_text(n: int) -> str:
    """1.5 GiB, 20.0 MiB, 12 KiB: binary units, as `tenant_bytes` is counted."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{max(0, n) // 1024} KiB" if n >= 1024 else f"{max(0, n)} bytes"


def measure(paths: tuple[Path, ...]) -> int:
    """Bytes beneath `paths`: each inode once, no link followed; a regular file its size
    but at least `ENTRY_BYTES`, a folder, link or anything else `ENTRY_BYTES`. Any depth
    or path length (`file_tree.walk`); a folder that cannot be read counts as one entry.
    A tree whose folders move meanwhile is walked again, up to `WALKS` times (then what
    the last walk counted)."""
    total = 0
    for _ in range(WALKS):
        total, whole = _measured(paths)
        if whole:
            break
    return total


def _measured(paths: tuple[Path, ...]) -> tuple[int, bool]:
    """(bytes counted, whether every walk ended without a folder moving under it)."""
    seen: set[tuple[int, int]] = set()
    total, whole = 0, True
    for path in paths:
        try:
            for entry in walk(path, skipped=[]):
                info = entry.st
                key = (info.st_dev, info.st_ino)
                if key in seen:
                    continue
                seen.add(key)
                regular = stat.S_ISREG(info.st_mode)
                total += max(info.st_size, ENTRY_BYTES) if regular else ENTRY_BYTES
        except TreeChanged:
            whole = False
        except (NotADirectoryError, PermissionError):  # the path itself: not a folder
            continue
    return total, whole


@dataclass
class _Usage:
    bytes: int
    measured: float  # the clock when the trees were last walked


class TenantQuota:
    def __init__(
        self,
        home: Path,
        limit: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        ttl_s: float = TTL_S,
    ) -> None:
        self.home = home
        self.limit = limit
        self._clock, self._ttl = clock, ttl_s
        self._usage: dict[str, _Usage] = {}
        self._lock = threading.Lock()
        self.walks = 0  # how many times a tree was walked (for tests and /status)

    def dirs(self, tenant: str) -> TenantDirs:
        return TenantDirs.of(self.home, tenant)

    def set_limit(self, limit: int) -> None:
        """`[quota] tenant_bytes` as reloaded (from the next write on)."""
        self.limit = limit

    def usage(self, dirs: TenantDirs) -> int:
        """Bytes the tenant holds now (walked at most once per `ttl_s` or invalidation)."""
        with self._lock:
            return self._current(dirs).bytes

    def remaining(self, dirs: TenantDirs) -> int:
        """Bytes the tenant may still write (`UNLIMITED` without a limit; never < 0)."""
        if not self.limit:
            return UNLIMITED
        return max(0, self.limit - self.usage(dirs))

    async def room(self, dirs: TenantDirs) -> int:
        """`remaining`, for a caller on the event loop: a walk that is due runs on a worker
        thread (a tenant of 100,000 files took 0.4 s to walk; with the default quota one
        may hold a million, and the loop serves every tenant)."""
        if not self.limit:
            return UNLIMITED
        with self._lock:
            known = self._kept(dirs)
        if known is None:
            return await asyncio.to_thread(self.remaining, dirs)
        return max(0, self.limit - known.bytes)

    async def fits(self, dirs: TenantDirs, needed: int) -> None:
        """`check`, for a caller on the event loop (a due walk on a worker thread)."""
        if self.limit:
            with self._lock:
                known = self._kept(dirs)
            if known is None:
                await asyncio.to_thread(self.check, dirs, needed)
            elif known.bytes + needed > self.limit:
                raise QuotaExceeded(known.bytes, self.limit, needed)

    def check(self, dirs: TenantDirs, needed: int) -> None:
        """`QuotaExceeded` when `needed` more bytes would pass the limit."""
        if self.limit:
            used = self.usage(dirs)
            if used + needed > self.limit:
                raise QuotaExceeded(used, self.limit, needed)

    def take(self, dirs: TenantDirs, n: int) -> None:
        """Count `n` bytes about to be written, or `QuotaExceeded` (nothing counted)."""
        with self._lock:
            usage = self._current(dirs)
            if self.limit and usage.bytes + n > self.limit:
                raise QuotaExceeded(usage.bytes, self.limit, n)
            usage.bytes += n

    def charge(self, dirs: TenantDirs, n: int) -> None:
        """Bytes roost wrote (n > 0) or removed (n < 0) there itself."""
        with self._lock:
            known = self._usage.get(dirs.tenant)
            if known is not None:
                known.bytes = max(0, known.bytes + n)

    def invalidate(self, tenant: str) -> None:
        """Something else wrote there: measure again at the next question."""
        with self._lock:
            self._usage.pop(tenant, None)

    def _kept(self, dirs: TenantDirs) -> _Usage | None:
        """The tenant's figure while it is current (None: a walk is due)."""
        known = self._usage.get(dirs.tenant)
        if known is None or self._clock() - known.measured >= self._ttl:
            return None
        return known

    def _current(self, dirs: TenantDirs) -> _Usage:
        known = self._kept(dirs)
        if known is None:
            self.walks += 1
            now = self._clock()  # the figure's time is the walk's start
            known = _Usage(measure((dirs.workspace, dirs.out)), now)
            self._usage[dirs.tenant] = known
        return known


class QuotaObserver:
    """A turn observer: after a turn whose tools ran, the tenant is measured again."""

    def __init__(self, quota: TenantQuota) -> None:
        self._quota = quota

    async def before_turn(self, turn: TurnContext, session: Session, events: TurnEvents) -> None:
        return None

    async def after_turn(self, turn: TurnContext, result: AgentResult, events: TurnEvents) -> None:
        if result.tool_runs:
            self._quota.invalidate(turn.dirs.tenant)
