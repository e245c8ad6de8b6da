"""Stop a web answer that runs on another instance (instances sharing one home).

A web turn runs on the instance that holds its HTTP request, under the
chat's lease `chat:web:<identity>:<chat>` (`bridge.channels.web.leased`);
the person's Stop (`POST /api/chat/stop`) may reach any instance. When the
turn does not run here, `StopRelay.ask` reads who holds the chat's lease
(the caller's own identity and chat, so one person never reaches another's
chat): nobody, or this process -> nothing runs; another instance -> it
leaves a mark, the lease `webstop:<chat lease>` owned by the holder's owner
(`MARK_MS`, so a mark nobody takes goes away), and notifies the holder's
topic (`topic_of(owner)`, `Database.notify`: LISTEN/NOTIFY on PostgreSQL).

Every instance `serve`s its own topic while it runs: at a wake it takes
(deletes) every mark addressed to it (`bridge.storage.lease_take`, one
statement: a mark is taken once) and stops the running turn of each marked
chat whose lease it holds now (`holding`, entered by `leased` around each
turn), each in a task of its own; a marked chat it no longer holds (the
turn ended before the ask came) is let be. A turn whose lease was just
taken but which the core does not run yet is looked for again every
`RETRY_S` while its hold lasts. A wake without a mark (the listener's
reconnect, its first LISTEN) stops nothing. Costs: nothing per turn; a
relayed stop is three statements where it arrives (holder, mark, notify)
and one where it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Final as Constant

from bridge.core.dispatch import lease_name
from bridge.storage.errors import StorageError
from bridge.storage.lease_take import take_all
from bridge.storage.leases import Leases
from bridge.storage.protocol import Database

log = logging.getLogger(__name__)

MARK: Constant = "webstop:"  # + the chat's lease name
MARK_MS: Constant = 10_000  # a mark the holder did not take by then is gone
RETRY_S: Constant = 0.05  # a marked turn not running yet (its lease just taken): look again
StopHere = Callable[[str, str], Awaitable[bool]]  # (identity, chat) -> a turn was stopped


def chat_key(identity: str, chat: str) -> str:
    """A web chat's key in the dispatcher's names (`leased`): its lease is `chat:<key>`."""
    return f"web:{identity}:{chat}"


def lease_of(identity: str, chat: str) -> str:
    """A web chat's lease name, as `LeaseHold` names it."""
    return lease_name(chat_key(identity, chat))


def topic_of(owner: str) -> str:
    """The notify topic of one process (a lease owner): 48 of `[a-z0-9_]`."""
    return "webstop_" + hashlib.sha256(owner.encode()).hexdigest()[:40]


@dataclass(frozen=True, eq=False, slots=True)
class _Held:
    """One turn holding its chat's lease here (compared by identity: one per hold)."""

    identity: str
    chat: str


class StopRelay:
    """This process's side of relayed stops: `ask` another instance, `serve` its asks."""

    def __init__(self, db: Database, leases: Leases, owner: str, retry_s: float = RETRY_S) -> None:
        self._db, self._leases, self.owner = db, leases, owner
        self._retry_s = retry_s
        self._held: dict[str, _Held] = {}  # chat lease -> the turn holding it here
        self._stops: set[asyncio.Task[None]] = set()

    @property
    def stops(self) -> int:
        """Relayed stops under way here."""
        return len(self._stops)

    @contextlib.contextmanager
    def holding(self, identity: str, chat: str) -> Iterator[None]:
        """While inside, this process holds the chat's lease and runs its turn."""
        name, held = lease_of(identity, chat), _Held(identity, chat)
        self._held[name] = held
        try:
            yield
        finally:
            if self._held.get(name) is held:
                del self._held[name]

    async def ask(self, identity: str, chat: str) -> bool:
        """Ask the instance holding the chat's lease to stop its turn; False when no
        other instance holds it (nothing runs elsewhere)."""
        name = lease_of(identity, chat)
        holder = await self._leases.holder(name)
        if holder is None or holder.owner == self.owner:
            return False
        if await self._leases.acquire(MARK + name, holder.owner, MARK_MS) is None:
            return False  # a mark for an earlier holder not taken yet: it expires soon
        await self._db.notify(topic_of(holder.owner))
        log.info("asked %s to stop its turn of %s", holder.owner, name)
        return True

    async def serve(self, stop_here: StopHere) -> None:
        """Stop the turns other instances ask to stop; runs until cancelled (the stops
        under way too)."""
        try:
            async with self._db.subscribe(topic_of(self.owner)) as woken:
                while True:
                    await woken.wait()
                    try:
                        await self._take(stop_here)
                    except StorageError as exc:  # the database away: the next ask tries
                        log.warning("relayed stops not read: %s", exc)
        finally:
            for task in self._stops:
                task.cancel()
            await asyncio.gather(*self._stops, return_exceptions=True)

    async def _take(self, stop_here: StopHere) -> None:
        for mark in await take_all(self._db, self.owner, MARK):  # each taken once
            name = mark.removeprefix(MARK)
            held = self._held.get(name)
            if held is None:  # the turn ended before the ask came: nothing to stop
                log.info("relayed stop of %s: its turn had ended", name)
                continue
            task = asyncio.create_task(self._stop(name, held, stop_here))
            self._stops.add(task)
            task.add_done_callback(self._stops.discard)

    async def _stop(self, name: str, held: _Held, stop_here: StopHere) -> None:
        """Stop the held turn; the lease is taken a moment before the core runs the
        turn, so until then look again every `retry_s` while the hold lasts."""
        while not await stop_here(held.identity, held.chat):
            if self._held.get(name) is not held:
                log.info("relayed stop of %s: its turn had ended", name)
                return
            await asyncio.sleep(self._retry_s)
        log.info("relayed stop of %s: stopped", name)


def serving(relay: StopRelay, stop_here: StopHere) -> Callable[[], Awaitable[None]]:
    """Start `relay.serve` in a task; the closer that cancels it."""
    task = asyncio.get_running_loop().create_task(relay.serve(stop_here), name="web-stop-relay")

    async def stop() -> None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    return stop
