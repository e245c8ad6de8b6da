"""Tool drafts per chat in the database: every version `forge_create` wrote, until saved or expired.

A draft is keyed by (tenant, channel, chat, name); each `forge_create` whose
source differs from the newest version adds version n+1 (sha256, description,
source, time). So a draft survives a restart and another process (`roost
send`) sees it, and `/tool save` can say what changed between the version
the person was last shown and the one they are asked to consent to
(`bridge.personal_tools.consent`). `show` records which version (sha256) a
consent prompt showed (only a plain `/tool save NAME` records it); `/tool
save NAME yes` takes effect only for that one, and `shown_as` finds the draft
a button's `/tool yes HASH` names.

Drafts expire `keep_ms` (7 days) after their newest version; at most
`keep_versions` (20) versions of a name are kept, and at most `max_drafts` (16)
live drafts per chat: a new name past that is refused (`DraftLimit`, checked in
the unit that writes it, so on SQLite racing writes cannot pass it; on
PostgreSQL by at most the number of racing writes) until the person saves or
drops one (`remove`, `remove_all`: `/tool drop`). Saving a draft removes it
(the saved tool is the baseline from then on). The source is stored as the
tenant's masker left it (`Masked`: a store is a way out). A version is linted
and compiled again when it is read (`forge.library.build_spec`, cached by
hash), so a row never bypasses the forge's checks; one that no longer passes
them is not offered. The store runs on the `Database` protocol (SQLite or
PostgreSQL); a new version is written in one unit.

`drafts(key, limit)` runs before every message (the forge offers a chat's
newest drafts as tools, `limit` of them), and almost every chat has none. Given
the process's `TableChanges` (`bridge.loadout.db_changes`), the store mirrors
per tenant which chats have draft rows at all (expired ones included: a
superset) and answers a chat not in it without a statement. The mirror is
current only while the watch runs (`TableChanges.watch`): a write here updates
it before `put` returns and notifies the other processes (`roost send`, another
instance), whose mirror is read again after the notify; unwatched, every
`drafts` reads the chat's drafts (as without it).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bridge.core.sessions import SessionKey
from bridge.loadout.db_changes import TableChanges, TenantRows
from bridge.storage.protocol import Database
from bridge.storage.units import Unit, execute, fetch_one
from bridge.types.masked import Masked, require

if TYPE_CHECKING:
    from forge.library import ToolSpec

KEEP_MS = 7 * 86_400_000
KEEP_VERSIONS = 20
MAX_DRAFTS = 16  # live drafts per chat
_SPECS = 256  # compiled specs remembered, by sha256
TABLE = "tool_drafts"
Chats = frozenset[tuple[str, str]]  # (channel, chat) of a tenant's chats with draft rows


def _sha256(source: str) -> str:
    """`forge.library.sha256_text`, the one hash of a tool's source; the library (and its
    policy compiler) is imported when a draft is first written or read, not with roost."""
    from forge.library import sha256_text

    return sha256_text(source)


class DraftLimit(Exception):
    """A new draft refused: the chat holds `max_drafts` already (the message says what
    to do, fit for the model and the person)."""


@dataclass(frozen=True, slots=True)
class Draft:
    """One version of a draft, with its checked spec."""

    version: int
    spec: ToolSpec
    created_ms: int


@dataclass(frozen=True, slots=True)
class Written:
    """What `put` did: the version now newest, and the one before it (None: a new draft)."""

    current: Draft
    previous: Draft | None

    @property
    def changed(self) -> bool:
        return self.previous is None or self.previous.spec.sha256 != self.current.spec.sha256


class DraftStore:
    def __init__(
        self,
        db: Database,
        clock_ms: Callable[[], int],
        keep_ms: int = KEEP_MS,
        keep_versions: int = KEEP_VERSIONS,
        changes: TableChanges | None = None,
        max_drafts: int = MAX_DRAFTS,
    ) -> None:
        """`changes`: the process's, so a chat without drafts costs no statement (None:
        every `drafts` reads; see the module)."""
        self._db = db
        self._clock_ms = clock_ms
        self.keep_ms, self.keep_versions = keep_ms, keep_versions
        self.max_drafts = max_drafts
        self._specs: OrderedDict[str, ToolSpec | None] = OrderedDict()
        self._changes = changes
        self._chats: TenantRows[Chats] | None = (
            None if changes is None else changes.mirror(TABLE, self._chats_with_drafts)
        )

    async def put(self, key: SessionKey, spec: ToolSpec, source: Masked) -> Written:
        """Keep `spec` as the newest version of its name (nothing new when unchanged);
        `DraftLimit` for a new name in a chat holding `max_drafts` live drafts."""
        require(source, "the draft store")
        await self.prune()  # expired drafts of any chat go whenever a draft is written
        previous = await self.latest(key, spec.name)
        if previous is not None and previous.spec.sha256 == _sha256(source):
            return Written(previous, previous)
        version = previous.version + 1 if previous is not None else 1
        await self._db.atomic(self._written(key, spec, source, version, previous is None))
        await self._wrote(key, added=True)
        current = await self.latest(key, spec.name)
        assert current is not None
        return Written(current, previous)

    def _written(
        self, key: SessionKey, spec: ToolSpec, source: str, version: int, new: bool
    ) -> Unit[None]:
        if new:  # a new draft: within the chat's bound; what an expired one left goes first
            live = yield fetch_one(
                "SELECT COUNT(DISTINCT name) FROM tool_drafts WHERE tenant=? AND channel=?"
                " AND chat=? AND name != ? AND created_ms > ?",
                (*_args(key), spec.name, self._clock_ms() - self.keep_ms),
            )
            if live is not None and int(live[0]) >= self.max_drafts:
                raise DraftLimit(
                    f"this chat already holds {live[0]} unsaved tool drafts (at most "
                    f"{self.max_drafts}): rewrite one of them, or ask the person to keep one "
                    "(/tool save <name>) or drop one (/tool drop <name>) first"
                )
            yield from _removed(key, spec.name)
        yield execute(
            "INSERT INTO tool_drafts (tenant, channel, chat, name, version, sha256,"
            " description, source, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (*_args(key), spec.name, version, _sha256(source), spec.description, source,
             self._clock_ms()),
        )  # fmt: skip
        yield execute(
            "DELETE FROM tool_drafts WHERE tenant=? AND channel=? AND chat=? AND name=?"
            " AND version <= ?",
            (*_args(key), spec.name, version - self.keep_versions),
        )

    async def latest(self, key: SessionKey, name: str) -> Draft | None:
        """The newest version of `name` in this chat, unless it expired."""
        row = await self._db.fetch_one(
            "SELECT version, name, description, source, created_ms FROM tool_drafts"
            " WHERE tenant=? AND channel=? AND chat=? AND name=? AND created_ms > ?"
            " ORDER BY version DESC LIMIT 1",
            (*_args(key), name, self._clock_ms() - self.keep_ms),
        )
        return self._draft(row) if row is not None else None

    async def by_hash(self, key: SessionKey, name: str, sha256: str) -> Draft | None:
        """The kept version of `name` whose hash is `sha256` (None: not kept)."""
        row = await self._db.fetch_one(
            "SELECT version, name, description, source, created_ms FROM tool_drafts"
            " WHERE tenant=? AND channel=? AND chat=? AND name=? AND sha256=?"
            " ORDER BY version DESC LIMIT 1",
            (*_args(key), name, sha256),
        )
        return self._draft(row) if row is not None else None

    async def drafts(self, key: SessionKey, limit: int | None = None) -> list[Draft]:
        """The newest version of each draft of this chat, by name (`limit`: only that
        many, the most recently written)."""
        chats = self._chats if self._changes is not None and self._changes.watching else None
        if chats is not None and (key.channel, key.chat) not in await chats.get(key.tenant):
            return []  # no draft row in this chat (the mirror is current: see the module)
        rows = await self._db.fetch_all(
            "SELECT d.version, d.name, d.description, d.source, d.created_ms FROM tool_drafts d"
            " WHERE d.tenant=? AND d.channel=? AND d.chat=? AND d.created_ms > ?"
            " AND d.version = (SELECT MAX(version) FROM tool_drafts e WHERE e.tenant=d.tenant"
            " AND e.channel=d.channel AND e.chat=d.chat AND e.name=d.name)"
            " ORDER BY d.created_ms DESC, d.name"
            + ("" if limit is None else f" LIMIT {int(limit)}"),
            (*_args(key), self._clock_ms() - self.keep_ms),
        )
        rows = sorted(rows, key=lambda row: str(row[1]))
        return [d for d in map(self._draft, rows) if d is not None]

    async def names(self, key: SessionKey) -> list[str]:
        """The names of this chat's live drafts, sorted (nothing compiled)."""
        rows = await self._db.fetch_all(
            "SELECT DISTINCT name FROM tool_drafts WHERE tenant=? AND channel=? AND chat=?"
            " AND created_ms > ? ORDER BY name",
            (*_args(key), self._clock_ms() - self.keep_ms),
        )
        return [str(row[0]) for row in rows]

    async def shown(self, key: SessionKey, name: str) -> str | None:
        """The sha256 of the version the last consent prompt for `name` showed."""
        found = await self._db.fetch_value(
            "SELECT sha256 FROM tool_draft_shown WHERE tenant=? AND channel=? AND chat=?"
            " AND name=?",
            (*_args(key), name),
        )
        return str(found) if found is not None else None

    async def shown_as(self, key: SessionKey, prefix: str) -> list[str]:
        """The drafts of this chat whose last consent prompt showed a version whose
        sha256 starts with `prefix` (lower-case hex: a button's `/tool yes HASH`)."""
        if not prefix or set(prefix) - set("0123456789abcdef"):
            return []
        rows = await self._db.fetch_all(
            "SELECT name FROM tool_draft_shown WHERE tenant=? AND channel=? AND chat=?"
            " AND substr(sha256, 1, ?) = ? ORDER BY name",
            (*_args(key), len(prefix), prefix),
        )
        return [str(row[0]) for row in rows]

    async def show(self, key: SessionKey, name: str, sha256: str) -> None:
        """Record that a consent prompt showed this version of `name`."""
        await self._db.execute(
            "INSERT INTO tool_draft_shown (tenant, channel, chat, name, sha256, shown_ms)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, channel, chat, name)"
            " DO UPDATE SET sha256=excluded.sha256, shown_ms=excluded.shown_ms",
            (*_args(key), name, sha256, self._clock_ms()),
        )

    async def remove(self, key: SessionKey, name: str) -> None:
        """Forget a draft (it was saved or dropped): every version and what was shown of it."""
        await self._db.atomic(_removed(key, name))
        await self._wrote(key, added=False)

    async def remove_all(self, key: SessionKey) -> int:
        """Forget every draft of this chat (expired ones too); how many live ones went."""
        live = len(await self.names(key))
        await self._db.atomic(_removed_all(key))
        await self._wrote(key, added=False)
        return live

    async def _wrote(self, key: SessionKey, added: bool) -> None:
        """Keep the mirror true to a write of this process (before the write's caller
        goes on) and tell the other processes."""
        if self._chats is None or self._changes is None:
            return
        chat = (key.channel, key.chat)
        if added:
            self._chats.wrote(key.tenant, lambda chats: chats | {chat})
        else:  # the chat may have other drafts: read again at its next use
            self._chats.wrote(key.tenant)
        await self._changes.notify()

    async def _chats_with_drafts(self, tenant: str) -> Chats:
        rows = await self._db.fetch_all(
            "SELECT DISTINCT channel, chat FROM tool_drafts WHERE tenant=?", (tenant,)
        )
        return frozenset((str(channel), str(chat)) for channel, chat in rows)

    async def prune(self) -> int:
        """Drop drafts whose newest version expired (all their versions); rows removed."""
        before = self._clock_ms() - self.keep_ms
        stale = (
            " (tenant, channel, chat, name) IN (SELECT tenant, channel, chat, name"
            " FROM tool_drafts GROUP BY tenant, channel, chat, name HAVING MAX(created_ms) <= ?)"
        )
        shown = await self._db.execute(f"DELETE FROM tool_draft_shown WHERE{stale}", (before,))
        gone = await self._db.execute(f"DELETE FROM tool_drafts WHERE{stale}", (before,))
        return gone + shown

    def _draft(self, row: tuple[Any, ...]) -> Draft | None:
        version, name, description, source, created_ms = row
        spec = self._spec(name, description, source)
        return Draft(int(version), spec, int(created_ms)) if spec is not None else None

    def _spec(self, name: str, description: str, source: str) -> ToolSpec | None:
        """The version linted and compiled again (cached by hash); None if it fails now."""
        key = f"{_sha256(source)}:{name}:{description}"
        if key in self._specs:
            self._specs.move_to_end(key)
            return self._specs[key]
        from forge.library import build_spec  # the forge's compiler: only when a draft is read

        spec = build_spec(name, description, source).tool
        self._specs[key] = spec
        while len(self._specs) > _SPECS:
            self._specs.popitem(last=False)
        return spec


def _args(key: SessionKey) -> tuple[str, str, str]:
    return (key.tenant, key.channel, key.chat)


def _removed(key: SessionKey, name: str) -> Unit[None]:
    for table in ("tool_drafts", "tool_draft_shown"):
        yield execute(
            f"DELETE FROM {table} WHERE tenant=? AND channel=? AND chat=? AND name=?",
            (*_args(key), name),
        )


def _removed_all(key: SessionKey) -> Unit[None]:
    for table in ("tool_drafts", "tool_draft_shown"):
        yield execute(f"DELETE FROM {table} WHERE tenant=? AND channel=? AND chat=?", _args(key))
