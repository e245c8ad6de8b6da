"""Per-chat loadout choices (persona, audience, model, voice) in the `chat_settings` table.

Rows are keyed by (tenant, channel, chat, key), so one tenant's choice is
never visible to another. The store runs on the `Database` protocol
(`bridge.storage`): every write is ONE statement, then a notify of `TOPIC`.

Its readers are synchronous (the prompt, /status, the model a turn holds,
whether a chat speaks), so the store keeps the whole table in memory, as the
pairing store keeps its bindings: read by `load()` at start, kept by this
store's own writes (before their await returns), and read again whole by
`watch()` at every notify of `TOPIC` from any process (`roost` commands,
another instance on PostgreSQL). The table is small (a row per choice a
person made) and written rarely (commands). Each change of a tenant's rows,
by a write or a reload that found them different, moves the tenant's
version in `TableChanges`, which the prompt's memo keeps.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Final

from bridge.loadout.db_changes import TableChanges
from bridge.storage.errors import StorageError
from bridge.storage.protocol import Database

log = logging.getLogger(__name__)

TABLE: Final = "chat_settings"
TOPIC: Final = "chat_settings"  # notified by every write (the mirrors read the table again)
Chats = dict[tuple[str, str], dict[str, str]]  # (channel, chat) -> key -> value


class NotLoaded(RuntimeError):
    """A read before `load()`: a wiring mistake, not a person's."""


class ChatSettings:
    def __init__(self, db: Database, changes: TableChanges | None = None) -> None:
        """`changes`: the process's prompt-row versions (shared with the prompt); None:
        versions of this store's own."""
        self._db = db
        self.changes = changes if changes is not None else TableChanges(db)
        self._tenants: dict[str, Chats] | None = None  # None: not loaded yet
        self._writes = 0  # this store's writes so far (a load they overtook is dropped)
        self._soon: asyncio.Task[None] | None = None  # the last of `set_soon`'s writes
        self.changes.hold(TABLE, lambda tenant: self._tenants is not None)

    # -- the mirror -----------------------------------------------------------------------

    async def load(self) -> None:
        """Read the whole table into the mirror (at start, and after any process wrote);
        the version of every tenant whose rows differ moves."""
        writes = self._writes
        rows = await self._db.fetch_all(
            "SELECT tenant, channel, chat, key, value FROM chat_settings"
        )
        if writes != self._writes and self._tenants is not None:
            return  # a write of ours landed meanwhile: its notify reads the table again
        fresh: dict[str, Chats] = {}
        for tenant, channel, chat, key, value in rows:
            fresh.setdefault(str(tenant), {}).setdefault((str(channel), str(chat)), {})[
                str(key)
            ] = str(value)
        old = self._tenants or {}
        for tenant in fresh.keys() | old.keys():
            if fresh.get(tenant) != old.get(tenant):
                self.changes.bump(TABLE, tenant)
        self._tenants = fresh

    async def watch(self) -> None:
        """Read the table again at every notify of `TOPIC`, from any process; runs until
        cancelled (the composition root starts it)."""
        async with self._db.subscribe(TOPIC) as notified:
            while True:
                await notified.wait()
                try:
                    await self.load()
                except StorageError as exc:  # the database is away: the next notify retries
                    log.warning("chat settings could not be read again: %s", exc)

    def _chats(self, tenant: str) -> Chats:
        if self._tenants is None:
            raise NotLoaded("chat settings are read before ChatSettings.load()")
        return self._tenants.get(tenant, {})

    # -- reads (the mirror) ---------------------------------------------------------------

    def get_all(self, tenant: str, channel: str, chat: str) -> dict[str, str]:
        return dict(self._chats(tenant).get((channel, chat), {}))

    def get(self, tenant: str, channel: str, chat: str, key: str) -> str | None:
        return self._chats(tenant).get((channel, chat), {}).get(key)

    # -- writes: one statement each, then the notify ----------------------------------------

    async def set(self, tenant: str, channel: str, chat: str, key: str, value: str) -> None:
        await self._db.execute(
            "INSERT INTO chat_settings (tenant, channel, chat, key, value) VALUES (?,?,?,?,?) "
            "ON CONFLICT (tenant, channel, chat, key) DO UPDATE SET value = excluded.value",
            (tenant, channel, chat, key, value),
        )
        self._mirror(tenant, channel, chat, key, value)
        await self._db.notify(TOPIC)

    async def clear(self, tenant: str, channel: str, chat: str, key: str) -> bool:
        gone = await self._db.execute(
            "DELETE FROM chat_settings WHERE tenant = ? AND channel = ? AND chat = ? AND key = ?",
            (tenant, channel, chat, key),
        )
        self._mirror(tenant, channel, chat, key, None)
        if gone == 0:
            return False
        await self._db.notify(TOPIC)
        return True

    def set_soon(self, tenant: str, channel: str, chat: str, key: str, value: str) -> None:
        """`set` for a synchronous caller (the terminal inbox's marks): written in the
        background, each after the one before; `flush` awaits them (a closer of the
        roost, so none is lost at shutdown)."""
        before = self._soon

        async def write() -> None:
            if before is not None:
                await asyncio.gather(before, return_exceptions=True)
            await self.set(tenant, channel, chat, key, value)

        self._soon = asyncio.get_running_loop().create_task(write())

    async def flush(self) -> None:
        """Wait for every `set_soon` write (its error, if any, is logged)."""
        if self._soon is None:
            return
        try:
            await self._soon
        except StorageError as exc:
            log.warning("a chat setting could not be written: %s", exc)

    def _mirror(self, tenant: str, channel: str, chat: str, key: str, value: str | None) -> None:
        """This store's write, in the mirror (new dicts: a memo may hold the old ones)."""
        self._writes += 1
        if self._tenants is None:
            return  # not loaded: `load` reads it
        chats = dict(self._tenants.get(tenant, {}))
        kept = {k: v for k, v in chats.get((channel, chat), {}).items() if k != key}
        if value is not None:
            kept[key] = value
        if kept:
            chats[(channel, chat)] = kept
        else:
            chats.pop((channel, chat), None)
        if chats != self._tenants.get(tenant, {}):
            self.changes.bump(TABLE, tenant)
        if chats:
            self._tenants[tenant] = chats
        else:
            self._tenants.pop(tenant, None)
