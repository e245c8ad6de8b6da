"""The chain's head file: rewritten in place under the chain lock, written back at once.

`HeadFile.put(seq, digest)` rewrites the head (one padded 512-byte sector,
`store.head_bytes`) with `pwrite` on the chain writer's thread, under the
chain lock and only after the records it names were fdatasynced (their
device cache flushed): another process that takes the lock reads a whole
head, and no head that reaches the disk names a record that is not already
stable there. Then it starts the head's writeback (`sync_file_range`, which
does not wait for it: an overwrite in place changes no metadata), and the
next batch's `fdatasync` of the chain flushes the device's cache behind it.
An `fdatasync` of the head itself runs every `lag` puts (a hard bound on
how far a power cut can set the head back while batches keep coming) and at
`close()`; no batch waits for a head sync otherwise, and no second thread
is woken per batch. A crash before the head is stable leaves it behind the
chain, which `verify` accepts. The first put makes the file (never left
empty before it) and is synced at once, with its directory. Where
`sync_file_range` is missing (not Linux) every put is synced.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

from bridge.audit.store import head_bytes, put_head

log = logging.getLogger(__name__)

LAG = 64  # puts at most between two syncs of the head


class HeadFile:
    def __init__(self, path: Path, dir_fd: int, key: bytes | None, lag: int | None = None) -> None:
        self.path, self._dir_fd, self._key = path, dir_fd, key
        self._fd = -1  # opened (made) by the first put: an empty head would read as damaged
        self._sized = False  # the file holds exactly one head (no longer one left after it)
        self._lag = max(1, LAG if lag is None else lag)
        self._unsynced = 0  # puts since the last sync
        self.syncs = 0  # head syncs made (tests, benches)

    def put(self, seq: int, digest: str) -> None:
        """Rewrite the head (call under the chain lock, after the records are durable)."""
        new = False
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            new = os.fstat(self._fd).st_size == 0
        put_head(self._fd, head_bytes(seq, digest, self._key), trim=not self._sized)
        self._sized = True  # every head is HEAD_BYTES long: no later put leaves a tail
        self._unsynced += 1
        if new:  # a new file: synced now, and its directory entry with it
            self.sync()
            os.fsync(self._dir_fd)
        elif self._unsynced >= self._lag or _WRITEBACK is None:
            self.settle()
        else:
            try:
                _WRITEBACK(self._fd)
            except OSError:  # the head stays dirty: the next settle syncs it
                log.exception("audit head writeback not started")

    def settle(self) -> None:
        """Sync the puts not synced yet (every `lag` puts, and at the close)."""
        if self._unsynced == 0:
            return
        try:
            self.sync()
        except OSError as exc:  # the next settle tries again; the chain's records are durable
            log.error("audit head not synced: %s", exc)

    def sync(self) -> None:
        os.fdatasync(self._fd)
        self.syncs += 1
        self._unsynced = 0

    def close(self) -> None:
        """Sync what was put last, close the file."""
        if self._fd >= 0:
            self.settle()
            os.close(self._fd)
            self._fd = -1


SYNC_FILE_RANGE_WRITE = 2  # linux/fs.h: start writeback of the range's dirty pages, no wait


def _start_writeback() -> Callable[[int], None] | None:
    """Start writing the head's page back without waiting for it: Linux's `sync_file_range`
    (not in `os`; through libc, which lets the GIL go during the call), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        call = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    call.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
    call.restype = ctypes.c_int

    def start(fd: int) -> None:
        if call(fd, 0, 0, SYNC_FILE_RANGE_WRITE) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))

    return start


_WRITEBACK = _start_writeback()
