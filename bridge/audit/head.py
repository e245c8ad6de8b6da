"""The chain's head file: rewritten in place under the chain lock, synced off the waiters' path.

`HeadFile.put(seq, digest)` rewrites the head (one padded 512-byte sector,
`store.head_bytes`) with `pwrite` on the chain writer's thread, under the
chain lock and only after the records it names were fdatasynced: another
process that takes the lock reads a whole head, and no head the kernel
could write back names a record that is not on disk. Its `fdatasync` runs
on the head's own thread (`head-sync`), so the chain writer's next batch
does not wait for it (the chain's sync and the head's overlap). The head is
synced at most once per `LINGER_S` (20 ms): a put after a quiet spell is
synced at once, by the chain's writer itself when no other batch is queued
(`settle`: after it acknowledged its batch, no wake-up of the thread, whose
wake-up and GIL hand-offs cost more than the sync's own Python; a batch
queued during that sync waits for it), else by the woken thread; every put
made within 20 ms of a sync, or while it runs, waits for the next one, made
20 ms after it ended (the thread sleeps that long and no put wakes it), one
sync for all of them:
with turns arriving steadily that is one head sync and one wake-up per
20 ms instead of one per batch (each a disk flush, a thread wake-up and
GIL hand-offs). A crash before the sync leaves the head behind the chain
(by at most the records of the last 20 ms and one sync), which `verify`
accepts; another
process reads the head as put at once (the page cache), never a synced
one only. The first put of a new chain makes the file under a temporary
name, synced, then renamed into place with its directory synced (`_make`):
the head's name never stands for an empty file. `close()` syncs what was put last, then
ends the thread.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from bridge.audit.record import Signer
from bridge.audit.store import head_bytes, put_head

log = logging.getLogger(__name__)
LINGER_S = 0.02  # at most one head sync in this long: the puts meanwhile share the next


class HeadFile:
    def __init__(
        self,
        path: Path,
        dir_fd: int,
        key: bytes | None,
        linger: float = LINGER_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path, self._dir_fd, self._key = path, dir_fd, key
        self._signer = Signer(key) if key is not None else None
        self._linger, self._clock = linger, clock
        self._synced_at = -math.inf  # when the last sync began (`clock`)
        self._fd = -1  # opened (made) by the first put: an empty head would read as damaged
        self._sized = False  # the file holds exactly one head (no longer one left after it)
        self._wake = threading.Condition()
        self._dirty = False
        self._quiet = False  # the thread waits for a put (no sync owed, the linger out)
        self._closing = False
        self.syncs = 0  # head syncs made (tests, benches)
        self._thread = threading.Thread(target=self._run, name="head-sync", daemon=True)
        self._thread.start()

    def put(self, seq: int, digest: str, defer: bool = False) -> bool:
        """Rewrite the head (call under the chain lock, after the records are durable).

        `defer`: a put that would wake the quiet thread leaves that to the caller's
        `settle` (True: call it), which either syncs on the caller's thread (the chain's
        writer, its queue empty) or wakes the thread then."""
        data = head_bytes(seq, digest, self._key, self._signer)
        if self._fd < 0:
            try:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
            except FileNotFoundError:
                self._make(data)
                return False
        put_head(self._fd, data, trim=not self._sized)
        self._sized = True  # every head is HEAD_BYTES long: no later put leaves a tail
        with self._wake:
            self._dirty = True  # a sync owed already covers this put too
            if self._quiet:  # else the thread is syncing or sleeping out the linger
                if defer:
                    return True
                self._wake.notify()
        return False

    def settle(self, here: bool) -> None:
        """After a deferred put (`put(..., defer=True)` returned True): when `here` and
        the linger since the last sync is out, sync the head now on this thread (the
        thread, quiet, is not woken: one wake-up fewer); else wake the thread, which
        syncs at once or once the linger is out, as for any put. Only one thread puts
        (the chain's writer), so no put comes between the sync's claim and its end."""
        with self._wake:
            if not (self._dirty and self._quiet):  # synced meanwhile, or the thread is up
                return
            if not here or self._clock() < self._synced_at + self._linger:
                self._wake.notify()
                return
            self._dirty = False  # claimed: the quiet thread sees nothing owed
        try:
            self.sync()
        except OSError as exc:  # as on the thread: the next put tries again
            log.error("audit head not synced: %s", exc)
        with self._wake:
            self._synced_at = self._clock()  # the linger runs from the sync's end

    def _make(self, data: bytes) -> None:
        """The first head of a chain: written and synced under a temporary name, then
        renamed into place and the directory synced, so the head's name never stands
        for an empty or unsynced file (a crash between making the file and syncing its
        data could leave an empty head, which no process would open). A temporary
        file a crash left is removed when the chain is next opened."""
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            put_head(fd, data, trim=False)
            os.fdatasync(fd)
            os.rename(tmp, self.path)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._fd, self._sized = fd, True
        self.syncs += 1
        with self._wake:
            self._synced_at = self._clock()
        os.fsync(self._dir_fd)

    def sync(self) -> None:
        os.fdatasync(self._fd)
        self.syncs += 1

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._closing:
                    left = self._synced_at + self._linger - self._clock()
                    if left > 0:  # within the linger of the last sync: no put wakes it
                        self._wake.wait(left)
                    elif self._dirty:
                        break
                    else:  # quiet: the next put wakes it, and is synced at once
                        self._quiet = True
                        self._wake.wait()
                        self._quiet = False
                if not self._dirty:
                    return  # closing, and the last put is synced
                self._dirty = False
            try:
                self.sync()
            except OSError as exc:  # the next put tries again; the chain's records are durable
                log.error("audit head not synced: %s", exc)
            with self._wake:
                self._synced_at = self._clock()  # the linger runs from the sync's end

    def close(self) -> None:
        """Sync what was put last, end the thread, close the file."""
        with self._wake:
            self._closing = True
            self._wake.notify()
        self._thread.join()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
