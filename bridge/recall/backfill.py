"""Vectors for indexed messages, computed in the background after the lexical insert.

Storing a message never waits for a model: the `Indexer` writes the text and
its terms, and calls `wake(dirs)`; the `Backfill` task then embeds what has
no vector yet, `batch` texts a request, oldest first, and stores them
through the `Database` (`bridge.recall.vectors`; a chat's insert never waits
on a model). `roost import` runs `fill(dirs)` after its summary, with a
progress bar. A failing model is logged (the reason, never a text) and tried
again at the next wake or after `retry_s`; search meanwhile uses what is there
(messages without a vector are still found by their words).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path

from bridge.recall.embedder import Embedder, EmbedError, pack
from bridge.recall.indexer import Indexer
from bridge.recall.vectors import pending, store, use_model
from bridge.storage.errors import StorageError
from bridge.types.tenant_dirs import TenantDirs

log = logging.getLogger(__name__)
EMBED_CHARS = 4000  # a text is embedded by its first 4,000 characters (endpoints cap tokens)
Progress = Callable[[int], None]  # vectors stored so far


class Backfill:
    def __init__(
        self, embedder: Embedder, indexer: Indexer, batch: int = 64, retry_s: float = 300.0
    ) -> None:
        self.embedder = embedder
        self._indexer = indexer
        self._batch = batch
        self._retry_s = retry_s
        self._wanted: dict[Path, TenantDirs] = {}
        self._event = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._retries: dict[Path, asyncio.TimerHandle] = {}
        self._starting: asyncio.Task[None] | None = None

    def wake(self, dirs: TenantDirs) -> None:
        """The tenant has new messages (call on the event loop): embed them soon."""
        self._wanted[dirs.root] = dirs
        self._event.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="recall-backfill")

    def wake_all(self, home: Path) -> None:
        """Every tenant with messages or an index file of before (at start: what an import or
        a crash left behind); looked up in a task (call on the event loop)."""
        loop = asyncio.get_running_loop()
        self._starting = loop.create_task(self._wake_all(home), name="recall-backfill-start")

    async def _wake_all(self, home: Path) -> None:
        try:
            rows = await self._indexer.db.fetch_all("SELECT DISTINCT tenant FROM recall_messages")
        except StorageError as exc:
            log.warning("recall vectors: the tenants were not listed (%s)", exc)
            rows = []
        tenants = {str(t) for (t,) in rows}
        tenants |= {p.parent.parent.name for p in (home / "tenants").glob("*/recall/index.sqlite")}
        for tenant in sorted(tenants):
            with contextlib.suppress(ValueError):
                self.wake(TenantDirs.of(home, tenant))

    async def fill(self, dirs: TenantDirs, progress: Progress | None = None) -> int:
        """Embed every message of the tenant without a vector; returns how many were stored."""
        index = await self._indexer.index(dirs)  # moves an index file of before first
        db, tenant = index.db, index.tenant
        await use_model(db, tenant, self.embedder.name)
        done, after = 0, 0
        while True:
            rows = await pending(db, tenant, after, self._batch)
            if not rows:
                return done
            vectors = await self.embedder.embed([text[:EMBED_CHARS] for _, text in rows])
            blobs = [(rid, pack(v)) for (rid, _), v in zip(rows, vectors, strict=True)]
            await store(db, tenant, blobs)
            done, after = done + len(rows), rows[-1][0]
            if progress is not None:
                progress(done)

    async def aclose(self) -> None:
        for handle in self._retries.values():
            handle.cancel()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._starting is not None:
            self._starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._starting

    async def _run(self) -> None:
        while True:
            await self._event.wait()
            self._event.clear()
            while self._wanted:
                root, dirs = next(iter(self._wanted.items()))
                del self._wanted[root]
                try:
                    await self.fill(dirs)
                except (EmbedError, OSError, StorageError) as exc:
                    log.warning("recall vectors not computed for now: %s", exc)
                    self._later(dirs)
                except Exception:  # a bug must not end the task for every tenant
                    log.exception("recall vectors: unexpected failure")
                    self._later(dirs)

    def _later(self, dirs: TenantDirs) -> None:
        old = self._retries.pop(dirs.root, None)
        if old is not None:
            old.cancel()
        self._retries[dirs.root] = asyncio.get_running_loop().call_later(
            self._retry_s, self.wake, dirs
        )
