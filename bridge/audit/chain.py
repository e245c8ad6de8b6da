"""The audit chain writer: an `AuditSink` that returns once a record is fsynced.

`emit()` fits the details to the event's schema (`schema.py`: names people
typed become keyed ids, any other text is refused) and writes the records
on the loop when it can: it takes the cross-process lock without blocking
(or already holds it: records written, not yet synced), checks with one
`stat` that nobody else appended, appends the batch with one `write` and
hands only the `fdatasync` to the writer thread (`emit_many` writes a turn's
events as one batch). The lock stays held from the write until the sync
that covers it, so no other process (`roost backup`, another instance)
ever sees records that are not durable. The thread syncs everything
written before its sync began (group commit: records written while a sync
runs are covered by the next), acknowledges their waiters, rewrites the
head, and lets the lock go once nothing written is unsynced. A failed sync
cuts the file back to the last durable record and fails every waiter it
would have covered and every one written after it: none is acknowledged.
When the loop cannot write at once (the lock held by another process, a
tail that moved, a failure being repaired) the batch is queued and the
thread writes it the old way, blocking on the lock (never the loop).
the head's sync runs on a thread of its own (`bridge.audit.head`), beside
the next batch's: the head never names a record that is not durable, and
neither a waiter nor the next batch waits for the head's sync (a crash
before it leaves the head behind the chain, which `verify` accepts).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bridge.audit.head import HeadFile
from bridge.audit.keys import load_names_key
from bridge.audit.record import build_record, check_event, check_tenant
from bridge.audit.schema import Namer, Schemas, keyed_namer, sanitize
from bridge.audit.store import (
    ChainCorrupt,
    Tail,
    exclusive,
    head_path,
    inspect_tail,
    lock_path,
    write_all,
)

log = logging.getLogger(__name__)
REPAIRED = "audit.repaired"


@dataclass
class _Pending:
    event: str
    tenant: str | None
    details: dict[str, object]
    ts: int
    loop: asyncio.AbstractEventLoop | None = None
    future: asyncio.Future[int] | None = None


_STOP = object()
_SYNC = object()  # queued by the loop after a write: sync what is written


@dataclass
class _Written:
    """Records written, not yet synced: the file's end after them, the events, their seqs."""

    end: int
    pending: list[_Pending]
    seqs: list[int]


class AuditChain:
    """Append-only, hash-linked, fsynced JSONL audit log (see docs/audit.md)."""

    def __init__(
        self,
        path: Path,
        hmac_key: bytes | None = None,
        clock: Callable[[], float] = time.time,
        max_batch: int = 512,
        names_key: bytes | None = None,
        schemas: Schemas | None = None,
    ) -> None:
        self.path = path
        self._schemas = schemas  # `schema.schemas_for(platforms)`: the channels it keeps
        self._key = hmac_key
        self._names_key = names_key  # None: `<audit dir>/names.key`, made on first open
        self._namer: Namer | None = None
        self._clock = clock
        self._max_batch = max(1, max_batch)
        self._head = head_path(path)
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._fd = -1
        self._lock_fd = -1
        self._dir_fd = -1
        self._heads: HeadFile | None = None  # the head file, open while the chain is
        self._ino = -1  # the inode open on `_fd` (an fd's inode never changes)
        self._cache: tuple[int, int, str] | None = None  # size, seq, hash after our last write
        # The in-process state of the write-then-sync hand-off, under `_mu` (the loop only
        # ever tries it: held by the thread, the loop queues its batch instead of waiting).
        self._mu = threading.Lock()
        self._held = False  # this chain holds the flock: records written and not yet synced
        self._synced: tuple[int, int, str] | None = None  # size, seq, hash after the last sync
        self._unsynced: list[_Written] = []
        self._closing = False
        self._busy = False  # the thread works on the file outside `_mu`: the loop queues
        self.loop_writes = 0  # batches written on the loop (tests, benches)
        self.batches = 0  # number of fsynced batches, for the benchmark

    async def open(self) -> None:
        await asyncio.to_thread(self._open_sync)
        self._thread = threading.Thread(target=self._run, name="audit-writer", daemon=True)
        self._thread.start()

    async def aclose(self) -> None:
        self._closing = True
        if self._thread is not None:
            self._queue.put(_STOP)
            await asyncio.to_thread(self._thread.join)
            self._thread = None
        await asyncio.to_thread(self._close_fds)  # the head's last sync: off the loop

    async def __aenter__(self) -> AuditChain:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def emit(self, event: str, tenant: str | None, details: Mapping[str, object]) -> None:
        await self.append(event, tenant, details)

    async def emit_many(
        self, events: Sequence[tuple[str, str | None, Mapping[str, object]]]
    ) -> None:
        """Queue every event before waiting, so they share one write and fsync.

        The writer takes the list as one item and never splits it, so the batch is
        written, synced and failed as a whole: its last event carries the one future
        waited for (resolved once the whole batch is durable, or failed with it)."""
        if self._thread is None:
            raise RuntimeError("audit chain is not open")
        items = []
        for event, tenant, details in events:
            check_event(event)
            check_tenant(tenant)
            items.append(_Pending(event, tenant, self._fit(event, tenant, details), self._now()))
        if not items:
            return
        loop = asyncio.get_running_loop()
        done: asyncio.Future[int] = loop.create_future()
        items[-1].loop, items[-1].future = loop, done
        if not self._write_now(items):
            self._queue.put(items)  # one item: the writer never splits a turn's batch
        await done

    async def append(self, event: str, tenant: str | None, details: Mapping[str, object]) -> int:
        """Like `emit`, returning the record's sequence number."""
        check_event(event)
        check_tenant(tenant)
        if self._thread is None:
            raise RuntimeError("audit chain is not open")
        loop = asyncio.get_running_loop()
        fitted = self._fit(event, tenant, details)
        item = _Pending(event, tenant, fitted, self._now(), loop, loop.create_future())
        if not self._write_now([item]):
            self._queue.put(item)
        assert item.future is not None
        return await item.future

    def _fit(
        self, event: str, tenant: str | None, details: Mapping[str, object]
    ) -> dict[str, object]:
        assert self._namer is not None  # set by open()
        fitted = sanitize(event, tenant, details, self._namer, self._schemas)
        if "_dropped" in fitted or "_unknown" in fitted:
            log.warning(
                "audit %s: refused fields %s, %d unknown",
                event,
                fitted.get("_dropped", []),
                fitted.get("_unknown", 0),
            )
        return fitted

    def _now(self) -> int:
        return int(self._clock() * 1000)

    # --- on the loop -----------------------------------------------------

    def _write_now(self, pending: list[_Pending]) -> bool:
        """Append `pending` here, without ever blocking (`_mu` is only ever held for a few
        attribute moves), and queue its sync; False: it could not be written at once (the
        thread at work on the file, the lock held by another process, the tail moved or
        unknown): the caller queues it for the thread."""
        with self._mu:
            cache = self._cache
            if self._closing or self._busy or cache is None:
                return False
            held = self._held
            if not held:
                try:
                    fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:  # held by another process: the thread waits for it
                    return False
            try:  # still our file, and nobody else appended (the one `stat` of a batch)
                st = os.stat(self.path)
            except OSError:
                st = None
            if st is None or st.st_ino != self._ino or st.st_size != cache[0]:
                if not held:
                    fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
                return False  # the thread looks closer (and refuses a replaced chain)
            if not held:
                self._held, self._synced = True, cache
            self._append(pending)
            self.loop_writes += 1
        self._queue.put(_SYNC)
        return True

    def _append(self, pending: list[_Pending]) -> None:
        """Under `_mu`, holding the flock, the tail known: write the records (not synced)."""
        assert self._cache is not None
        end, seq, prev = self._cache
        data, last, digest = self._encode(pending, seq, prev)
        try:
            write_all(self._fd, data)
        except BaseException:
            try:  # a short write: cut it (the records before it stay, their sync is queued)
                os.ftruncate(self._fd, end)
            except OSError:
                self._cache = None  # the next batch reads the tail again
            raise
        self._cache = (end + len(data), last, digest)
        seqs = list(range(last - len(pending) + 1, last + 1))
        self._unsynced.append(_Written(end + len(data), pending, seqs))

    # --- writer thread -------------------------------------------------

    def _open_sync(self) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._dir_fd = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY)
        self._lock_fd = os.open(lock_path(self.path), os.O_RDWR | os.O_CREAT, 0o600)
        self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        self._ino = os.fstat(self._fd).st_ino
        try:
            with exclusive(self._lock_fd):
                if self._names_key is None:
                    self._names_key = load_names_key(self.path.parent)
                self._namer = keyed_namer(self._names_key)
                for orphan in self.path.parent.glob(f".{self._head.name}.*.tmp"):
                    orphan.unlink(missing_ok=True)
                self._heads = HeadFile(self._head, self._dir_fd, self._key)
                self._cache = self._repaired(self._tail())  # a torn tail cut and recorded
                self._synced = self._cache
                if self._unsynced:  # the repair's record
                    self._held = True
                    self._sync_written()
                    self._held = False
        except BaseException:
            self._close_fds()
            raise

    def _close_fds(self) -> None:
        if self._heads is not None:
            self._heads.close()  # its last put synced
            self._heads = None
        for name in ("_fd", "_lock_fd", "_dir_fd"):
            fd = getattr(self, name)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)

    def _run(self) -> None:
        stop = False
        while not stop:
            first = self._queue.get()
            if first is _STOP:
                break
            batch = [first]
            while len(batch) < self._max_batch:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is _STOP:
                    stop = True
                    break
                batch.append(nxt)
            pending = _flat(batch)
            if pending:
                self._write_queued(pending)
            self._sync_written()
        self._sync_written()

    def _write_queued(self, pending: list[_Pending]) -> None:
        """The writer's path: wait for the lock, read the tail if needed, write `pending`;
        meanwhile (`_busy`) the loop queues its batches rather than touch the file."""
        with self._mu:
            held, self._busy = self._held, True
        try:
            if not held:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
                self._held = True  # freed by `_sync_written` once nothing is unsynced
            if not held or self._cache is None:
                tail = self._tail()
                if not held:
                    self._synced = (tail.end, tail.seq, tail.hash)
                self._cache = self._repaired(tail)
            self._append(pending)
        except Exception as exc:  # resolve every waiter, keep the thread alive
            log.error("audit append failed: %s", exc)
            _resolve_all([(p, 0) for p in pending], exc)
        finally:
            with self._mu:
                self._busy = False

    def _sync_written(self) -> None:
        """Sync what is written until nothing is left unsynced, then let the lock go."""
        while True:
            with self._mu:
                if not self._unsynced:
                    if self._held:
                        fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
                        self._held = False
                    return
                written, self._unsynced = self._unsynced, []
                target = self._cache
            try:
                os.fdatasync(self._fd)  # an append: the new size is synced with the data
            except OSError as exc:
                self._sync_failed(written, exc)
                return
            self.batches += 1
            acks = [(p, q) for w in written for p, q in zip(w.pending, w.seqs, strict=True)]
            _resolve_all(acks, None)
            if target is not None:
                self._synced = target
                assert self._heads is not None  # open with the chain
                try:  # lock held: only this thread frees it
                    self._heads.put(target[1], target[2])
                except OSError as exc:  # the records are durable: a head behind is accepted
                    log.error("audit head not moved: %s", exc)

    def _sync_failed(self, written: list[_Written], exc: OSError) -> None:
        """The sync failed: the records since the last durable one may not be on disk. Cut
        them (the lock was held since: nobody else appended) and fail all their waiters,
        those written after the sync began too; the next batch continues the durable tail."""
        with self._mu:
            written = written + self._unsynced
            self._unsynced, self._busy = [], True
        synced, self._cache = self._synced, None
        try:
            if synced is not None and os.fstat(self._fd).st_size == written[-1].end:
                os.ftruncate(self._fd, synced[0])
                os.fsync(self._fd)
                self._cache = synced
        except OSError as cut:  # the next batch reads the tail (and goes on after them)
            log.error("audit chain: records not synced could not be cut: %s", cut)
        finally:
            with self._mu:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
                self._held = self._busy = False
        log.error("audit sync failed: %s", exc)
        _resolve_all([(p, 0) for w in written for p in w.pending], exc)

    def _tail(self) -> Tail:
        """Where the batch goes on. One `stat` of the path: its inode says the file is still
        ours, its size (the same inode's) whether another process appended since our last
        batch; each system call here lets the GIL go and waits to take it back from the loop,
        so the batch's path to its sync makes as few as it can."""
        st = os.stat(self.path)
        if st.st_ino != self._ino:
            raise ChainCorrupt(f"{self.path} was replaced while roost was writing it")
        cache = self._cache
        if cache is not None and cache[0] == st.st_size:
            return Tail(seq=cache[1], hash=cache[2], end=cache[0], torn=0)
        return inspect_tail(self._fd, self._head, self._key)

    def _repaired(self, tail: Tail) -> tuple[int, int, str]:
        """Under the lock: cut a torn last line (synced), and queue a record saying so."""
        if tail.torn:
            os.ftruncate(self._fd, tail.end)
            os.fsync(self._fd)
            log.warning("audit chain: cut %d bytes of a torn last line", tail.torn)
            self._cache = (tail.end, tail.seq, tail.hash)
            repair = _Pending(REPAIRED, None, {"bytes_cut": tail.torn}, self._now())
            self._append([repair])
            assert self._cache is not None
            return self._cache
        return (tail.end, tail.seq, tail.hash)

    def _encode(self, pending: list[_Pending], seq: int, prev: str) -> tuple[bytes, int, str]:
        """The records of `pending` after record `seq` (hash `prev`): bytes, last seq, last hash."""
        lines = []
        for p in pending:
            seq += 1
            record, line = build_record(
                seq=seq,
                ts=p.ts,
                event=p.event,
                tenant=p.tenant,
                details=p.details,
                prev=prev,
                key=self._key,
            )
            prev = str(record["hash"])
            lines.append(line)
        return "".join(lines).encode("ascii"), seq, prev


def _flat(batch: list[object]) -> list[_Pending]:
    """The events of a batch of queued items (an `emit_many` queues a list)."""
    out: list[_Pending] = []
    for item in batch:
        if isinstance(item, _Pending):
            out.append(item)
        elif isinstance(item, list):
            out.extend(p for p in item if isinstance(p, _Pending))
    return out


def _resolve_all(done: list[tuple[_Pending, int]], exc: Exception | None) -> None:
    """Wake the waiters of a batch: one call into each event loop, not one per event."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[int], int]]] = {}
    for p, seq in done:
        if p.loop is not None and p.future is not None:
            by_loop.setdefault(p.loop, []).append((p.future, seq))

    def settle(items: list[tuple[asyncio.Future[int], int]]) -> None:
        for fut, seq in items:
            if fut.done():
                continue
            if exc is not None:
                fut.set_exception(exc)
            else:
                fut.set_result(seq)

    for loop, items in by_loop.items():
        with contextlib.suppress(RuntimeError):  # loop already closed
            loop.call_soon_threadsafe(settle, items)
