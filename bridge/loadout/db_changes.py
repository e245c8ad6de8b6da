"""The prompt tables' rows of a tenant, mirrored in process, and the versions the memo keeps.

The prompt's memo (`bridge.prompt.memo`) reuses what a view made of a
tenant's rows of `roost.db` (chat settings, skill grades, style bullets)
while those rows are unchanged, and the prompt is built synchronously: so
the stores on the `Database` protocol (`bridge.storage`) keep the rows the
prompt reads in a `TenantRows` mirror per table, one entry per tenant,
which the prompt reads without a database round trip.

- **This process's writes** go through the store, which updates (or drops)
  the tenant's entry and bumps the (table, tenant) version *before its
  write's await returns*, so the next prompt sees them.
- **Other processes' writes** (`roost` commands, another instance on
  PostgreSQL): every store write of a prompt table also notifies `TOPIC`;
  `TableChanges.watch` (started by the composition root) bumps
  `generation` at each notify, which makes every entry stale. Without a
  running watch (a store made for one command) no entry is current: every
  `get` and `prepare` reads. A stale
  entry is read again by `prepare` (the turn awaits it before the prompt,
  `PromptRowsObserver`) and, when its rows differ, its version moves.
  A notify of this process's own write wakes the watch too: its entries
  are read again once, but the memo keeps its parts when the rows read are
  the same (the version moves only on a difference).

`token(tables, tenant)` is what a memo keeps: equal tokens mean the rows of
those tables of that tenant it was made from are the ones mirrored now; None
when a table is not mirrored for the tenant (nothing vouches: ask again).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Final, Generic, Protocol, TypeVar

from bridge.storage.protocol import Database

TOPIC: Final = "prompt_rows"  # notified by every write of a prompt table, by any process
REMEMBER = 4096  # tenants mirrored per table (the least recently used forgotten)

T = TypeVar("T")


@dataclass(slots=True)
class _Entry(Generic[T]):
    value: T
    generation: int  # TableChanges.generation when it was read


class TableChanges:
    """Versions per (table, tenant) of the mirrored rows, and the generation of other
    processes' writes (see the module)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.generation = 0  # moves at every notify of TOPIC
        self.watching = False  # `watch` runs: an entry read since is current until a notify
        self._subscribed = asyncio.Event()  # set while `watching`
        self._versions: dict[tuple[str, str], int] = {}
        self._mirrors: dict[str, TenantRows[object]] = {}
        self._holds: dict[str, Callable[[str], bool]] = {}  # table -> mirrored for a tenant?

    @property
    def tables(self) -> frozenset[str]:
        return frozenset(self._holds)

    def hold(self, table: str, holds: Callable[[str], bool]) -> None:
        """A store mirrors `table` and keeps its versions here; `holds(tenant)`: whether
        the tenant's rows are mirrored now (the first store to say so is asked)."""
        self._holds.setdefault(table, holds)

    def mirror(
        self, table: str, load: Callable[[str], Awaitable[T]], remember: int = REMEMBER
    ) -> TenantRows[T]:
        """The mirror of `table` (one per table: the first store to ask gives the loader)."""
        found = self._mirrors.get(table)
        if found is None:
            found = TenantRows(self, table, load, remember)
            self._mirrors[table] = found
            self.hold(table, found.holds)
        return found  # type: ignore[return-value]

    def bump(self, table: str, tenant: str) -> None:
        key = (table, tenant)
        self._versions[key] = self._versions.get(key, 0) + 1

    def version(self, table: str, tenant: str) -> int:
        return self._versions.get((table, tenant), 0)

    def token(self, tables: Iterable[str], tenant: str) -> tuple[int, ...] | None:
        """What stays equal while the mirrored rows of `tables` of `tenant` do (None: a
        table is not mirrored for the tenant, so nothing vouches for it)."""
        out = []
        for table in tables:
            holds = self._holds.get(table)
            if holds is None or not holds(tenant):
                return None
            out.append(self._versions.get((table, tenant), 0))
        return tuple(out)

    async def prepare(self, tenant: str) -> None:
        """Read again every stale or missing entry of `tenant` (the turn awaits this
        before its prompt; nothing is read when all are current)."""
        stale = [m for m in self._mirrors.values() if not m.current(tenant)]
        if len(stale) == 1:
            await stale[0].get(tenant)
        elif stale:
            await asyncio.gather(*(m.get(tenant) for m in stale))

    async def notify(self) -> None:
        """Tell every process (this one too) that a prompt table was written."""
        await self.db.notify(TOPIC)

    async def watch(self) -> None:
        """Move `generation` at every notify of TOPIC from any process; runs until
        cancelled (the composition root starts it)."""
        async with self.db.subscribe(TOPIC) as notified:
            self.generation += 1  # what was read before the subscription: read again
            self.watching = True
            self._subscribed.set()
            try:
                while True:
                    await notified.wait()
                    self.generation += 1
            finally:
                self.watching = False
                self._subscribed.clear()

    async def subscribed(self) -> None:
        """Return once `watch` has subscribed (a started watch task may not have run yet:
        short statements run inline on the loop's thread without yielding)."""
        await self._subscribed.wait()


class TenantRows(Generic[T]):
    """One table's rows per tenant as its store last read or wrote them (see the module)."""

    def __init__(
        self,
        changes: TableChanges,
        table: str,
        load: Callable[[str], Awaitable[T]],
        remember: int = REMEMBER,
    ) -> None:
        self._changes, self.table, self._load = changes, table, load
        self._remember = remember
        self._entries: OrderedDict[str, _Entry[T]] = OrderedDict()

    def holds(self, tenant: str) -> bool:
        return tenant in self._entries

    def current(self, tenant: str) -> bool:
        """Whether the entry holds what the database holds, as far as this process was
        told: read since the last notify, while `watch` runs (unwatched: never)."""
        entry = self._entries.get(tenant)
        changes = self._changes
        return entry is not None and changes.watching and entry.generation == changes.generation

    def peek(self, tenant: str) -> T | None:
        """The mirrored rows (possibly stale); None when never read (synchronous readers:
        the prompt, after `prepare`)."""
        entry = self._entries.get(tenant)
        return None if entry is None else entry.value

    async def get(self, tenant: str) -> T:
        """The tenant's rows: the mirror's when current, else read (one statement)."""
        changes = self._changes
        entry = self._entries.get(tenant)
        if entry is not None and self.current(tenant):
            self._entries.move_to_end(tenant)
            return entry.value
        generation, version = changes.generation, changes.version(self.table, tenant)
        value = await self._load(tenant)
        if changes.version(self.table, tenant) != version:
            return value  # this process wrote meanwhile: the entry it left is newer
        entry = self._entries.get(tenant)
        if entry is None or entry.value != value:
            changes.bump(self.table, tenant)
        self._entries[tenant] = _Entry(value, generation)
        self._entries.move_to_end(tenant)
        if len(self._entries) > self._remember:
            gone, _ = self._entries.popitem(last=False)
            changes.bump(self.table, gone)
        return value

    def wrote(self, tenant: str, edit: Callable[[T], T] | None = None) -> None:
        """This process changed the tenant's rows: `edit` makes the entry what the write
        made it (None: the entry is dropped, read again at its next use); the version
        moves either way. Call it before the write's await returns to its caller."""
        entry = self._entries.get(tenant)
        if entry is not None:
            if edit is None:
                del self._entries[tenant]
            else:
                entry.value = edit(entry.value)
        self._changes.bump(self.table, tenant)


class Watches(Protocol):
    async def watch(self) -> None: ...


def watching(mirror: Watches) -> Callable[[], Awaitable[None]]:
    """Start `mirror.watch()` (`TableChanges`, `ChatSettings`) in a task; the closer that
    cancels it (for `Roost.aclose`)."""
    task = asyncio.get_running_loop().create_task(mirror.watch(), name="prompt-rows-watch")

    async def stop() -> None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    return stop
