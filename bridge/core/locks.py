"""Per-tenant locks: an asyncio lock per tenant root, plus an flock for other processes.

Writers of one tenant (memory, profile) take `async with locks.hold(root, "memory")`
around a read-modify-write; inside it `file_lock` keeps a second process
(`roost` on the command line) out as well. Different tenants never wait on
each other.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path


class TenantLocks:
    def __init__(self) -> None:
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    @contextlib.asynccontextmanager
    async def hold(self, root: Path, part: str) -> AsyncIterator[None]:
        key = (str(root), part)
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        async with lock:
            yield


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive flock on `path` (created 0600); blocks only other processes."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
