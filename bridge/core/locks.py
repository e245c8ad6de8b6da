"""Locks by key: one FIFO type for chats and tenants, plus an flock for other processes.

`KeyedLocks[K]` gives mutual exclusion per key: holders of one key take turns
in arrival order, different keys never wait on each other, and a key's entry
exists only while someone holds or waits for it, so a stream of one-off keys
(chats, tenants) leaves nothing behind. The core serialises each chat with it.

Writers of one tenant (memory, profile) take `async with locks.hold(root, "memory")`
(`TenantLocks`, built on `KeyedLocks`) around a read-modify-write; inside it
`file_lock` keeps a second process (`roost` on the command line) out as well.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import Hashable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass(slots=True)
class LockEntry:
    """One key's lock and how many tasks hold it or wait for it."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


class KeyedLocks(Generic[K]):
    """FIFO locks by key, forgotten when nobody holds or waits for them."""

    def __init__(self) -> None:
        self._entries: dict[K, LockEntry] = {}

    def hold(self, key: K) -> AbstractAsyncContextManager[None]:
        """`async with locks.hold(key):` the key's lock, in arrival order (a plain object,
        not a generator-based manager: a turn takes two of these)."""
        return _Hold(self, key)

    def _left(self, key: K, entry: LockEntry) -> None:
        """One holder or waiter of `key` is gone: the entry goes with the last of them."""
        entry.users -= 1
        if entry.users == 0:
            del self._entries[key]

    def users(self, key: K) -> int:
        """How many tasks hold or wait for `key` now (0: a new holder goes at once)."""
        entry = self._entries.get(key)
        return entry.users if entry is not None else 0

    def __len__(self) -> int:
        """How many keys are held or waited for right now."""
        return len(self._entries)


class _Hold(Generic[K]):
    """One `KeyedLocks.hold`: counted as a user from the moment it waits, the lock held
    inside, the entry forgotten once nobody holds or waits (a cancelled wait too)."""

    __slots__ = ("_entry", "_key", "_locks")

    def __init__(self, locks: KeyedLocks[K], key: K) -> None:
        self._locks, self._key = locks, key
        self._entry: LockEntry | None = None

    async def __aenter__(self) -> None:
        entries, key = self._locks._entries, self._key
        entry = entries.get(key)
        if entry is None:
            entry = entries[key] = LockEntry()
        entry.users += 1
        try:
            await entry.lock.acquire()  # asyncio.Lock wakes its waiters in arrival order
        except BaseException:
            self._locks._left(key, entry)
            raise
        self._entry = entry

    async def __aexit__(self, *exc: object) -> None:
        entry = self._entry
        assert entry is not None
        self._entry = None
        try:
            entry.lock.release()
        finally:
            self._locks._left(self._key, entry)


class TenantPart(NamedTuple):
    """What a tenant lock guards: one part (memory, profile, ...) of one tenant root."""

    root: str
    part: str


class TenantLocks:
    """Per-tenant, per-part locks; different tenants never wait on each other."""

    def __init__(self) -> None:
        self._locks: KeyedLocks[TenantPart] = KeyedLocks()

    def hold(self, root: Path, part: str) -> AbstractAsyncContextManager[None]:
        return self._locks.hold(TenantPart(str(root), part))

    def __len__(self) -> int:
        return len(self._locks)


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive flock on `path` (created 0600); blocks only other processes."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
