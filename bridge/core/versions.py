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
history after a change (`SessionStore.forget`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

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


class TurnVersions:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._db = conn

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def point(self, key: SessionKey, seq: int) -> BranchPoint | None:
        """The turn of the shown message `seq` (the person's or the final answer)."""
        found = self._db.execute(
            f"SELECT turn FROM session_messages WHERE id=? AND tenant=? AND channel=? AND chat=?"
            f" AND {_SHOWN}",
            (seq, *_args(key)),
        ).fetchone()
        return None if found is None else self._asked(key, int(found[0]))

    def _asked(self, key: SessionKey, turn: int) -> BranchPoint | None:
        row = self._db.execute(
            "SELECT msg_id, content, meta, at FROM session_messages WHERE tenant=? AND channel=?"
            " AND chat=? AND turn=? AND role='user' ORDER BY id LIMIT 1",
            (*_args(key), turn),
        ).fetchone()
        return None if row is None else BranchPoint(turn, str(row[0]), row[1], row[2], row[3])

    def parent(self, key: SessionKey, turn: int) -> str:
        before = self._asked(key, turn - 1) if turn > 1 else None
        return before.msg_id if before is not None and before.msg_id else f"#{turn}"

    def siblings(self, conversation: int, tenant: str, turn: int, parent: str) -> list[Sibling]:
        rows = self._db.execute(
            "SELECT id, made FROM turn_versions WHERE conversation=? AND tenant=?"
            " AND first_turn=? AND parent=? ORDER BY made, id",
            (conversation, tenant, turn, parent),
        ).fetchall()
        return [Sibling(int(i), float(m)) for i, m in rows]

    def ordered(self, key: SessionKey, conversation: int, point: BranchPoint) -> list[Sibling]:
        """Every version at `point`, the session's own as id 0, oldest first."""
        kept = self.siblings(conversation, key.tenant, point.turn, self.parent(key, point.turn))
        return sorted([*kept, Sibling(0, point.at)], key=lambda s: (s.made, s.id != 0, s.id))

    def shown(
        self, key: SessionKey, conversation: int, turns: Sequence[int]
    ) -> dict[int, tuple[int, int, bool]]:
        """For each of `turns` that has other versions: (its index, how many, whether any
        of them asked something else: an edit, not only another answer), 0-based."""
        out: dict[int, tuple[int, int, bool]] = {}
        if not self._db.execute(
            "SELECT 1 FROM turn_versions WHERE conversation=? AND tenant=? LIMIT 1",
            (conversation, key.tenant),
        ).fetchone():
            return out
        for turn in turns:
            point = self._asked(key, turn)
            if point is None:
                continue
            order = self.ordered(key, conversation, point)
            if len(order) > 1:
                index = next(i for i, s in enumerate(order) if s.id == 0)
                out[turn] = (index, len(order), self._edited(point, order))
        return out

    def _edited(self, point: BranchPoint, order: list[Sibling]) -> bool:
        """Whether a version at `point` starts with another message of the person's."""
        asked = (point.content, point.meta)
        for sibling in order:
            if sibling.id == 0:
                continue
            (text,) = self._db.execute(
                "SELECT rows FROM turn_versions WHERE id=?", (sibling.id,)
            ).fetchone()
            first = next((r for r in json.loads(text) if r[1] == "user"), None)
            if first is not None and (first[2], first[7]) != asked:
                return True
        return False

    def branch(self, key: SessionKey, conversation: int, seq: int) -> BranchPoint:
        """Keep turns k.. (k: the turn of message `seq`) as a version, and take them out
        of the session; returns turn k's message (to be asked again or edited)."""
        with self._transaction():
            point = self.point(key, seq)
            if point is None:
                raise VersionError("that message is no longer in this conversation")
            self._keep_tail(key, conversation, point)
            self._prune(conversation, key.tenant)
        return point

    def switch(self, key: SessionKey, conversation: int, seq: int, index: int) -> bool:
        """Show version `index` (0-based, oldest first) at the turn of message `seq`;
        False when it is shown already."""
        with self._transaction():
            point = self.point(key, seq)
            if point is None:
                raise VersionError("that message is no longer in this conversation")
            order = self.ordered(key, conversation, point)
            if not 0 <= index < len(order):
                raise VersionError(f"there are {len(order)} versions of this message")
            target = order[index]
            if target.id == 0:
                return False
            self._keep_tail(key, conversation, point)
            self._put_back(key, target.id)
        return True

    def undo_branch(self, key: SessionKey, conversation: int, point: BranchPoint) -> bool:
        """After a branch at `point` whose new turn was not stored (the model failed):
        the newest version kept there comes back. False when a turn k exists."""
        with self._transaction() as db:
            there = db.execute(
                "SELECT 1 FROM session_messages WHERE tenant=? AND channel=? AND chat=?"
                " AND turn>=? LIMIT 1",
                (*_args(key), point.turn),
            ).fetchone()
            kept = self.siblings(conversation, key.tenant, point.turn, self.parent(key, point.turn))
            if there or not kept:
                return False
            self._put_back(key, max(kept, key=lambda s: (s.made, s.id)).id)
        return True

    def _put_back(self, key: SessionKey, version: int) -> None:
        """Insert a kept version's rows into the session, which ends before them
        (in a transaction); the version is then the session's own."""
        db = self._db
        (text,) = db.execute("SELECT rows FROM turn_versions WHERE id=?", (version,)).fetchone()
        rows = json.loads(text)
        db.executemany(
            f"INSERT INTO session_messages (tenant, channel, chat, {_ROW})"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(*_args(key), *row) for row in rows],
        )
        db.execute("DELETE FROM turn_versions WHERE id=?", (version,))
        added = sum(len(r[2]) + len(r[3]) for r in rows)
        db.execute(
            "UPDATE sessions SET turns=?, chars=chars+? WHERE tenant=? AND channel=? AND chat=?",
            (max(r[0] for r in rows), added, *_args(key)),
        )

    def _keep_tail(self, key: SessionKey, conversation: int, point: BranchPoint) -> None:
        """Move the session's turns from `point` on into a version (in a transaction)."""
        db = self._db
        rows: list[list[Any]] = [
            list(r)
            for r in db.execute(
                f"SELECT {_ROW} FROM session_messages WHERE tenant=? AND channel=? AND chat=?"
                " AND turn>=? ORDER BY id",
                (*_args(key), point.turn),
            )
        ]
        chars = sum(len(r[2]) + len(r[3]) for r in rows)
        db.execute(
            "INSERT INTO turn_versions (conversation, tenant, first_turn, parent, made, turns,"
            " chars, rows) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                conversation,
                key.tenant,
                point.turn,
                self.parent(key, point.turn),
                point.at,
                len({r[0] for r in rows}),
                chars,
                json.dumps(rows, ensure_ascii=False, separators=(",", ":")),
            ),
        )
        db.execute(
            "DELETE FROM session_messages WHERE tenant=? AND channel=? AND chat=? AND turn>=?",
            (*_args(key), point.turn),
        )
        db.execute(
            "UPDATE sessions SET turns=?, chars=MAX(0, chars-?)"
            " WHERE tenant=? AND channel=? AND chat=?",
            (point.turn - 1, chars, *_args(key)),
        )

    def set_sent(self, key: SessionKey, msg_id: str, meta: str) -> None:
        """What the person sent, for the message `msg_id` asked again with the model's
        text (its files were no longer kept)."""
        self._db.execute(
            "UPDATE session_messages SET meta=? WHERE tenant=? AND channel=? AND chat=?"
            " AND msg_id=? AND role='user'",
            (meta, *_args(key), msg_id),
        )

    def _prune(self, conversation: int, tenant: str) -> None:
        self._db.execute(
            "DELETE FROM turn_versions WHERE conversation=? AND tenant=? AND id NOT IN"
            " (SELECT id FROM turn_versions WHERE conversation=? AND tenant=?"
            " ORDER BY id DESC LIMIT ?)",
            (conversation, tenant, conversation, tenant, KEEP),
        )

    def forget(self, conversation: int, tenant: str) -> None:
        """A conversation archived or deleted: its versions go (inside the caller's
        transaction)."""
        self._db.execute(
            "DELETE FROM turn_versions WHERE conversation=? AND tenant=?", (conversation, tenant)
        )
