"""The chain's head file: rewritten in place under the chain lock, synced lazily by the writer.

`HeadFile.put(seq, digest)` rewrites the head (one padded 512-byte sector,
`store.head_bytes`) with `pwrite` on the chain writer's thread, under the
chain lock and only after the records it names were fdatasynced: another
process that takes the lock reads a whole head, and no head the kernel
could write back names a record that is not on disk. Its `fdatasync` is
lazy and runs on the writer's thread too: the writer calls `settle()` when
nothing is queued (so no waiter waits for it, and no batch queued meanwhile
is held up), and a put syncs at once when `lag` puts went unsynced under a
steady load (a bound on how far a power cut can set the head back); one sync
covers every put before it. No thread of its own: a batch costs no second
thread's wake-up and GIL hand-offs. A crash before the sync leaves the head
behind the chain, which `verify` accepts. The first put makes the file
(never left empty before it) and is synced at once, with its directory.
`close()` syncs what was put last.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from bridge.audit.store import head_bytes, put_head

log = logging.getLogger(__name__)

LAG = 64  # puts at most between two syncs of the head while the writer is never idle


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
        elif self._unsynced >= self._lag:
            self.settle()

    def settle(self) -> None:
        """Sync the puts not synced yet (the writer calls it when nothing is queued)."""
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
