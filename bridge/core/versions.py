"""Other versions of a turn: an edited message or a regenerated answer keeps the old one.

The session is one line of turns, what the model is given. Editing the
person's message of turn k, or asking for another answer to it, *branches*
at k: `branch` moves turns k..end (their rows as stored, with tool steps) into
`turn_versions` and leaves the session at turn k-1, so the next turn stored
is the new turn k. `switch` swaps the turns from k on with a kept version, in
one transaction, so the model continues from the version shown; when the new
turn of a branch is not stored (the model failed), `undo_branch` brings the
newest kept version back, so nothing the person had disappears. A version is
known by its conversation, its first turn and its *parent*: the message id of
turn k-1's message (`#k` when that turn is not in the session), so versions
made inside a version come back with it, as in a tree. `siblings` are the
versions at one point, ordered by when their turn k was asked; the one in the
session counts among them. Turn numbers stay contiguous (the session's
`turns` is the newest turn), so folding old turns into a summary works as
before. A version whose turns were folded away is never offered again; a
conversation's versions go when it is archived. The caller drops its cached
history after a change (`SessionStore.forget`). The reads and writes are units
(`bridge.storage.units`): `branch`, `switch` and `undo_branch` each run as
one transaction (`Database.atomic`: one job on SQLite's writer), on SQLite or
PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from bridge.storage.protocol import Database
from bridge.storage.units import Unit, drive, execute, execute_many, fetch_all, fetch_one
from bridge.types.session_key import SessionKey

KEEP = 50  # versions per conversation; each holds the turns after its branch point
_ROW = "turn, role, content, tool_calls, tool_call_id, msg_id, at, meta"
_SHOWN = "role IN ('user', 'assistant') AND tool_calls = ''"


class VersionError(Exception):
    """Why a message cannot be branched or switched (said to the person)."""


class BranchPoint(NamedTuple):
    """The turn a message belongs to, and that turn's message from the person."""

    turn: int
    msg_id: str
    content: str  # the stored user message (the model's view of it)
    meta: str  # what the person sent (bridge.core.shown)
    at: float


class Sibling(NamedTuple):
    id: int  # 0: the version in the session now
    made: float


def _args(key: SessionKey) -> tuple[str, str, str]:
    return (key.tenant, key.channel, key.chat)


def _point(key: SessionKey, seq: int) -> Unit[BranchPoint | None]:
    """The turn of the shown message `seq` (the person's or the final answer)."""
    found = yield fetch_one(
        f"SELECT turn FROM session_messages WHERE id=? AND tenant=? AND channel=? AND chat=?"
        f" AND {_SHOWN}",
        (seq, *_args(key)),
    )
    if found is None:
        return None
    return (yield from _asked(key, int(found[0])))


def _asked(key: SessionKey, turn: int) -> Unit[BranchPoint | None]:
    row = yield fetch_one(
        "SELECT msg_id, content, meta, at FROM session_messages WHERE tenant=? AND channel=?"
        " AND chat=? AND turn=? AND role='user' ORDER BY id LIMIT 1",
        (*_args(key), turn),
    )
    return None if row is None else BranchPoint(turn, str(row[0]), row[1], row[2], row[3])


def _parent(key: SessionKey, turn: int) -> Unit[str]:
    before = (yield from _asked(key, turn - 1)) if turn > 1 else None
    return before.msg_id if before is not None and before.msg_id else f"#{turn}"


def _siblings(conversation: int, tenant: str, turn: int, parent: str) -> Unit[list[Sibling]]:
    rows = yield fetch_all(
        "SELECT id, made FROM turn_versions WHERE conversation=? AND tenant=?"
        " AND first_turn=? AND parent=? ORDER BY made, id",
        (conversation, tenant, turn, parent),
    )
    return [Sibling(int(i), float(m)) for i, m in rows]


def _kept(key: SessionKey, conversation: int, turn: int) -> Unit[list[Sibling]]:
    """The versions kept at `turn` of the session (not the session's own)."""
    parent = yield from _parent(key, turn)
    return (yield from _siblings(conversation, key.tenant, turn, parent))


def _ordered(key: SessionKey, conversation: int, point: BranchPoint) -> Unit[list[Sibling]]:
    """Every version at `point`, the session's own as id 0, oldest first."""
    kept = yield from _kept(key, conversation, point.turn)
    return sorted([*kept, Sibling(0, point.at)], key=lambda s: (s.made, s.id != 0, s.id))


def _shown(
    key: SessionKey, conversation: int, turns: Sequence[int]
) -> Unit[dict[int, tuple[int, int, bool]]]:
    out: dict[int, tuple[int, int, bool]] = {}
    if not (
        yield fetch_one(
            "SELECT 1 FROM turn_versions WHERE conversation=? AND tenant=? LIMIT 1",
            (conversation, key.tenant),
        )
    ):
        return out
    for turn in turns:
        point = yield from _asked(key, turn)
        if point is None:
            continue
        order = yield from _ordered(key, conversation, point)
        if len(order) > 1:
            index = next(i for i, s in enumerate(order) if s.id == 0)
            out[turn] = (index, len(order), (yield from _edited(point, order)))
    return out


def _edited(point: BranchPoint, order: list[Sibling]) -> Unit[bool]:
    """Whether a version at `point` starts with another message of the person's."""
    asked = (point.content, point.meta)
    for sibling in order:
        if sibling.id == 0:
            continue
        (text,) = yield fetch_one("SELECT rows FROM turn_versions WHERE id=?", (sibling.id,))
        first = next((r for r in json.loads(text) if r[1] == "user"), None)
        if first is not None and (first[2], first[7]) != asked:
            return True
    return False


def _branched(key: SessionKey, conversation: int, seq: int) -> Unit[BranchPoint]:
    point = yield from _point(key, seq)
    if point is None:
        raise VersionError("that message is no longer in this conversation")
    yield from _keep_tail(key, conversation, point)
    yield from _pruned(conversation, key.tenant)
    return point


def _switched(key: SessionKey, conversation: int, seq: int, index: int) -> Unit[bool]:
    point = yield from _point(key, seq)
    if point is None:
        raise VersionError("that message is no longer in this conversation")
    order = yield from _ordered(key, conversation, point)
    if not 0 <= index < len(order):
        raise VersionError(f"there are {len(order)} versions of this message")
    target = order[index]
    if target.id == 0:
        return False
    yield from _keep_tail(key, conversation, point)
    yield from _put_back(key, target.id)
    return True


def _undone(key: SessionKey, conversation: int, point: BranchPoint) -> Unit[bool]:
    there = yield fetch_one(
        "SELECT 1 FROM session_messages WHERE tenant=? AND channel=? AND chat=?"
        " AND turn>=? LIMIT 1",
        (*_args(key), point.turn),
    )
    kept = yield from _kept(key, conversation, point.turn)
    if there or not kept:
        return False
    yield from _put_back(key, max(kept, key=lambda s: (s.made, s.id)).id)
    return True


def _put_back(key: SessionKey, version: int) -> Unit[None]:
    """Insert a kept version's rows into the session, which ends before them
    (in a transaction); the version is then the session's own."""
    (text,) = yield fetch_one("SELECT rows FROM turn_versions WHERE id=?", (version,))
    rows = json.loads(text)
    yield execute_many(
        f"INSERT INTO session_messages (tenant, channel, chat, {_ROW})"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(*_args(key), *row) for row in rows],
    )
    yield execute("DELETE FROM turn_versions WHERE id=?", (version,))
    added = sum(len(r[2]) + len(r[3]) for r in rows)
    yield execute(
        "UPDATE sessions SET turns=?, chars=chars+? WHERE tenant=? AND channel=? AND chat=?",
        (max(r[0] for r in rows), added, *_args(key)),
    )


def _keep_tail(key: SessionKey, conversation: int, point: BranchPoint) -> Unit[None]:
    """Move the session's turns from `point` on into a version (in a transaction)."""
    found = yield fetch_all(
        f"SELECT {_ROW} FROM session_messages WHERE tenant=? AND channel=? AND chat=?"
        " AND turn>=? ORDER BY id",
        (*_args(key), point.turn),
    )
    rows: list[list[Any]] = [list(r) for r in found]
    chars = sum(len(r[2]) + len(r[3]) for r in rows)
    parent = yield from _parent(key, point.turn)
    yield execute(
        "INSERT INTO turn_versions (conversation, tenant, first_turn, parent, made, turns,"
        " chars, rows) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            conversation,
            key.tenant,
            point.turn,
            parent,
            point.at,
            len({r[0] for r in rows}),
            chars,
            json.dumps(rows, ensure_ascii=False, separators=(",", ":")),
        ),
    )
    yield execute(
        "DELETE FROM session_messages WHERE tenant=? AND channel=? AND chat=? AND turn>=?",
        (*_args(key), point.turn),
    )
    yield execute(
        "UPDATE sessions SET turns=?, chars=CASE WHEN chars>? THEN chars-? ELSE 0 END"
        " WHERE tenant=? AND channel=? AND chat=?",
        (point.turn - 1, chars, chars, *_args(key)),
    )


def _pruned(conversation: int, tenant: str) -> Unit[None]:
    yield execute(
        "DELETE FROM turn_versions WHERE conversation=? AND tenant=? AND id NOT IN"
        " (SELECT id FROM turn_versions WHERE conversation=? AND tenant=?"
        " ORDER BY id DESC LIMIT ?)",
        (conversation, tenant, conversation, tenant, KEEP),
    )


def forgotten(conversation: int, tenant: str) -> Unit[None]:
    """A conversation archived or deleted: its versions go (in the caller's unit)."""
    yield execute(
        "DELETE FROM turn_versions WHERE conversation=? AND tenant=?", (conversation, tenant)
    )


class TurnVersions:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def point(self, key: SessionKey, seq: int) -> BranchPoint | None:
        """The turn of the shown message `seq` (the person's or the final answer)."""
        return await drive(self._db, _point(key, seq))

    async def siblings(
        self, conversation: int, tenant: str, turn: int, parent: str
    ) -> list[Sibling]:
        return await drive(self._db, _siblings(conversation, tenant, turn, parent))

    async def ordered(
        self, key: SessionKey, conversation: int, point: BranchPoint
    ) -> list[Sibling]:
        """Every version at `point`, the session's own as id 0, oldest first."""
        return await drive(self._db, _ordered(key, conversation, point))

    async def shown(
        self, key: SessionKey, conversation: int, turns: Sequence[int]
    ) -> dict[int, tuple[int, int, bool]]:
        """For each of `turns` that has other versions: (its index, how many, whether any
        of them asked something else: an edit, not only another answer), 0-based."""
        return await drive(self._db, _shown(key, conversation, turns))

    async def branch(self, key: SessionKey, conversation: int, seq: int) -> BranchPoint:
        """Keep turns k.. (k: the turn of message `seq`) as a version, and take them out
        of the session; returns turn k's message (to be asked again or edited)."""
        return await self._db.atomic(_branched(key, conversation, seq))

    async def switch(self, key: SessionKey, conversation: int, seq: int, index: int) -> bool:
        """Show version `index` (0-based, oldest first) at the turn of message `seq`;
        False when it is shown already."""
        return await self._db.atomic(_switched(key, conversation, seq, index))

    async def undo_branch(self, key: SessionKey, conversation: int, point: BranchPoint) -> bool:
        """After a branch at `point` whose new turn was not stored (the model failed):
        the newest version kept there comes back. False when a turn k exists."""
        return await self._db.atomic(_undone(key, conversation, point))

    async def set_sent(self, key: SessionKey, msg_id: str, meta: str) -> None:
        """What the person sent, for the message `msg_id` asked again with the model's
        text (its files were no longer kept)."""
        await self._db.execute(
            "UPDATE session_messages SET meta=? WHERE tenant=? AND channel=? AND chat=?"
            " AND msg_id=? AND role='user'",
            (meta, *_args(key), msg_id),
        )

    async def forget(self, conversation: int, tenant: str) -> None:
        """A conversation archived or deleted: its versions go."""
        await drive(self._db, forgotten(conversation, tenant))
