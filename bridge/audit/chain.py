"""The audit chain writer: an `AuditSink` that returns once a record is fsynced.

One writer thread per process owns the file. `emit()` checks the event's and
tenant's names, queues the event with a copy of its details and awaits its
acknowledgement (`emit_many` queues its events as one item, so a turn's
events always share one write); the thread takes everything queued (up to
`max_batch` items), fits each event's details to its schema (`schema.py`:
names people typed become keyed ids, any other text is refused; on the
thread, off the loop), and under the cross-process lock re-reads the chain's
tail, appends the batch, fdatasyncs it, rewrites the head file in place and
lets the lock go, then acknowledges each event of the batch (group commit),
one call into each waiting loop. The head's sync runs on a thread of its own
(`bridge.audit.head`), beside the next batch's, except after a quiet spell
with no other batch queued: then the writer syncs it itself once it has
acknowledged the batch (the head's thread is not woken). The head never
names a record that is not durable, no waiter waits for the head's sync,
and the next batch waits only for one the writer makes (a crash before it
leaves the head behind the chain, which `verify` accepts).
"""

from __future__ import annotations

import asyncio
import contextlib
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
from bridge.audit.record import Signer, check_event, check_tenant, record_line
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
CHECKED = 4096  # (event, tenant) pairs remembered as checked (`AuditChain._check`)


@dataclass
class _Pending:
    event: str
    tenant: str | None
    details: dict[str, object]  # as the caller gave them until the writer fits them
    ts: int
    loop: asyncio.AbstractEventLoop | None = None
    future: asyncio.Future[int] | None = None


_STOP = object()


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
        self._signer = Signer(hmac_key) if hmac_key is not None else None  # pads hashed once
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
        self._cache: tuple[int, int, str] | None = None  # size, seq, hash after our last batch
        self.batches = 0  # number of fsynced batches, for the benchmark
        # (event, tenant) pairs whose names passed `check_event` and `check_tenant`: a
        # turn's three records are checked by two set looks, not six regular expressions
        self._checked: set[tuple[str, str | None]] = set()

    async def open(self) -> None:
        await asyncio.to_thread(self._open_sync)
        self._thread = threading.Thread(target=self._run, name="audit-writer", daemon=True)
        self._thread.start()

    async def aclose(self) -> None:
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
        """Queue every event before waiting, so they share one write and fsync."""
        done = self.queue_many(events)
        if done is not None:
            await done

    def queue_many(
        self, events: Sequence[tuple[str, str | None, Mapping[str, object]]]
    ) -> asyncio.Future[int] | None:
        """Check and queue the events now, as one item, and return the future that is
        done once they are durable (None: no events), so the caller's next steps overlap
        the write with no hop through its loop (`TurnEvents.begin`). The names are
        checked here (a `ValueError` to the caller); the details are copied here and
        fitted to their schemas by the writer thread, off the loop.

        The writer takes the list as one item and never splits it, so the batch is
        written, synced and failed as a whole: its last event carries the one future
        (resolved once the whole batch is durable, or failed with it). A future the
        caller cancels meanwhile is left alone; the batch is written all the same."""
        if self._thread is None:
            raise RuntimeError("audit chain is not open")
        items = []
        for event, tenant, details in events:
            self._check(event, tenant)
            items.append(_Pending(event, tenant, dict(details), self._now()))
        if not items:
            return None
        loop = asyncio.get_running_loop()
        done: asyncio.Future[int] = loop.create_future()
        items[-1].loop, items[-1].future = loop, done
        self._queue.put(items)  # one item: the writer never splits a turn's batch
        return done

    async def append(self, event: str, tenant: str | None, details: Mapping[str, object]) -> int:
        """Like `emit`, returning the record's sequence number."""
        self._check(event, tenant)
        if self._thread is None:
            raise RuntimeError("audit chain is not open")
        loop = asyncio.get_running_loop()
        item = _Pending(event, tenant, dict(details), self._now(), loop, loop.create_future())
        self._queue.put(item)
        assert item.future is not None
        return await item.future

    def _check(self, event: str, tenant: str | None) -> None:
        """`check_event` and `check_tenant` (a `ValueError`), each pair checked once (at
        most `CHECKED` pairs kept: then all are forgotten and checked again)."""
        pair = (event, tenant)
        if pair in self._checked:
            return
        check_event(event)
        check_tenant(tenant)
        if len(self._checked) >= CHECKED:
            self._checked.clear()
        self._checked.add(pair)

    def _fit(self, pending: list[_Pending]) -> None:
        """Fit each event's details to its schema (on the writer thread, before the
        lock): only what fits is ever encoded."""
        assert self._namer is not None  # set by open()
        namer, schemas = self._namer, self._schemas
        for p in pending:
            fitted = p.details = sanitize(p.event, p.tenant, p.details, namer, schemas)
            if "_dropped" in fitted or "_unknown" in fitted:
                log.warning(
                    "audit %s: refused fields %s, %d unknown",
                    p.event,
                    fitted.get("_dropped", []),
                    fitted.get("_unknown", 0),
                )

    def _now(self) -> int:
        return int(self._clock() * 1000)

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
                _, last = self._commit([])  # repairs a torn tail (and records it) if any
                if last is not None:
                    self._heads.put(*last)  # a failure here fails the open
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
            owed = False
            try:
                self._fit(pending)
                with exclusive(self._lock_fd):
                    seqs, last = self._commit(pending)
                    owed = self._move_head(last)
            except Exception as exc:  # resolve every waiter, keep the thread alive
                log.error("audit append failed: %s", exc)
                _resolve_all([(p, 0) for p in pending], exc)
                if owed:  # a head put, then the unlock failed: its thread syncs it
                    assert self._heads is not None
                    self._heads.settle(here=False)
                continue
            # Durable, the head moved and the lock let go: the waiters go on. Waking the
            # loop comes before the head's sync, so no waiter waits for that.
            _resolve_all(list(zip(pending, seqs, strict=True)), None)
            if owed:  # after a quiet spell: synced here when no batch waits, one wake-up
                assert self._heads is not None  # fewer (the head's thread sleeps on)
                try:
                    self._heads.settle(here=self._queue.empty())
                except Exception as exc:  # the records are durable; the thread lives on
                    log.error("audit head not synced: %s", exc)

    def _move_head(self, last: tuple[int, str] | None) -> bool:
        """Rewrite the head to name record `last` (seq, hash), durable now; True: a sync
        is owed at once (a quiet spell before it), for the writer to settle once it
        acknowledged the batch, else its sync runs on the head's own thread, beside the
        next batch. A head that cannot be written is logged and left behind (as a crash
        would leave it, which `verify` accepts): the records are durable all the same,
        and the next batch moves it."""
        if last is None:
            return False
        assert self._heads is not None  # open with the chain
        try:
            return self._heads.put(*last, defer=True)
        except OSError as exc:
            log.error("audit head not moved (the records are durable): %s", exc)
            return False

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

    def _commit(self, pending: list[_Pending]) -> tuple[list[int], tuple[int, str] | None]:
        """Under the lock: repair a torn tail, append `pending` and fdatasync it; the
        records' sequence numbers and the last record's (seq, hash) (None: nothing
        written), for the caller to move the head and then acknowledge."""
        tail = self._tail()
        wanted = len(pending)
        if tail.torn:
            os.ftruncate(self._fd, tail.end)
            os.fsync(self._fd)
            log.warning("audit chain: cut %d bytes of a torn last line", tail.torn)
            repair = _Pending(REPAIRED, None, {"bytes_cut": tail.torn}, self._now())
            pending = [repair, *pending]
        if not pending:
            self._cache = (tail.end, tail.seq, tail.hash)
            return [], None
        data, seq, prev = self._encode(pending, tail.seq, tail.hash)
        try:
            write_all(self._fd, data)
            os.fdatasync(self._fd)  # an append: the new size is synced with the data
        except BaseException:
            self._cache = None
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, tail.end)
                os.fsync(self._fd)
            raise
        # Under the lock nobody else appended: the file ends where our write did (no
        # `fstat` between the sync and the waiters).
        self._cache = (tail.end + len(data), seq, prev)
        self.batches += 1
        return list(range(seq - wanted + 1, seq + 1)), (seq, prev)

    def _encode(self, pending: list[_Pending], seq: int, prev: str) -> tuple[bytes, int, str]:
        """The records of `pending` after record `seq` (hash `prev`): bytes, last seq, last hash."""
        lines = []
        signer = self._signer
        for p in pending:
            seq += 1
            line, prev = record_line(seq, p.ts, p.event, p.tenant, p.details, prev, signer)
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
