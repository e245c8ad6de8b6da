"""Past conversations, kept readable after `/reset`: the archive and its pages.

Every chat has one current conversation (the session, `bridge.core.sessions`)
and any number of archived ones. `archive(key, now, then)` runs whenever a
session is cleared (`/reset`, idle expiry): in ONE unit with the session
store's delete (`then`; `Database.atomic`, one job on SQLite's writer) it
copies the person's messages and the final answers (not the tool steps)
and the summary into `conversation_messages` / `conversations`, and opens a
new current conversation with a new id. The failed turns are read and
forgotten (with the versions) in the same unit (`bridge.core.turn_failures`,
`bridge.core.versions`, on the same `Database`). `page(...)` reads either kind
newest last, paged backwards by `before` (a message's `seq`); the current
one starts with its summary (seq 0, status `summary`) when it has one. What
a message shows (the person's words and files rather than the model's view,
tool cards, failed turns, versions) is `bridge.core.history_page`; archiving
freezes that view (the `meta` column). A title the person gave a
conversation (`conversations.title` set while it is current) is kept.
Ids are numbers shared by all chats; every read checks that the id belongs
to the asking (tenant, channel, chat). The archive is pruned by age
(`keep_days`, default 90) and count per chat (`keep_count`, default 100)
whenever a conversation is archived. A stopped answer is told by its mark
(`bridge.core.running.stopped_text`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bridge.core.history_page import CurrentPage, archive_rows, failed, forgotten, message
from bridge.core.shown import read_meta
from bridge.core.turn_failures import FailedRow
from bridge.storage.protocol import Database
from bridge.storage.units import Unit, execute, execute_many, fetch_one
from bridge.types.session_key import SessionKey

TITLE_CHARS = 60
MAX_PAGE = 200


def title_of(question: str) -> str:
    """A conversation's title: its first question on one line, cut to 60 characters."""
    line = " ".join(question.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"


@dataclass(frozen=True, slots=True)
class Page:
    conversation: int
    messages: list[dict[str, Any]]  # bridge.core.history_page.message, oldest first
    more: bool  # older messages exist (ask again with before = messages[0]["seq"])
    current: bool


_KEY = "tenant=? AND channel=? AND chat=?"
_CURRENT = f"SELECT id FROM conversations WHERE {_KEY} AND archived_at IS NULL"


class ConversationArchive:
    def __init__(
        self, db: Database, shown: CurrentPage, keep_days: float = 90.0, keep_count: int = 100
    ) -> None:
        self._db = db
        self.keep_days, self.keep_count = keep_days, keep_count
        self.shown = shown  # also the failed turns and the versions

    async def current(self, key: SessionKey, now: float) -> int:
        """The current conversation's id (made on first use; another process may race)."""
        found = await self._db.fetch_value(_CURRENT, _args(key))
        if found is not None:
            return int(found)
        return await self._db.atomic(_current(key, now))

    async def archive(self, key: SessionKey, now: float, then: Unit[None]) -> None:
        """Keep the session about to be cleared, and run `then` (the clear) in its unit."""
        found = await self._db.fetch_value(_CURRENT, _args(key))  # none made here
        ident = -1 if found is None else int(found)
        await self._db.atomic(self._archive(key, now, ident, then))

    def _archive(
        self, key: SessionKey, now: float, ident: int, then: Unit[None]
    ) -> Unit[int | None]:
        row = yield fetch_one(  # locked as read: an append elsewhere waits for the clear
            f"SELECT started_at, updated_at, turns, summary FROM sessions WHERE {_KEY}"
            f" {self._db.dialect.for_update}",
            _args(key),
        )
        failures = (yield from failed(ident, key.tenant)) if ident >= 0 else []
        if row is None and not failures:  # nothing said since the last reset: it stays
            yield from then
            return None
        if row is None:  # only turns that were never stored (failed, or the offline answer)
            row = (failures[0].at, failures[-1].at, 0, "")
        started, updated, turns, summary = row
        current = yield from _current(key, now)
        if current != ident:
            failures = []
        kept = yield from archive_rows(key, failures)
        yield execute_many(
            "INSERT INTO conversation_messages (conversation, tenant, role, text, at, meta)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [(current, key.tenant, *r) for r in kept],
        )
        first = yield fetch_one(_FIRST, _args(key))
        title = _title(first) if first is not None or not failures else _failed_title(failures)
        yield execute(
            "UPDATE conversations SET started_at=?, updated_at=?, turns=?,"
            " title=COALESCE(NULLIF(title, ''), ?), summary=?, archived_at=? WHERE id=?",
            (started, updated, turns, title, summary, now, current),
        )
        yield from then
        yield from _current(key, now)
        yield from self._prune(key, now)
        yield from forgotten(current, key.tenant)
        return int(current)

    def _prune(self, key: SessionKey, now: float) -> Unit[None]:
        """Drop archived conversations past `keep_days`, and this chat's past `keep_count`."""
        old = " archived_at IS NOT NULL AND archived_at < ?"
        too_many = (
            f" {_KEY} AND archived_at IS NOT NULL AND id NOT IN"
            f" (SELECT id FROM conversations WHERE {_KEY}"
            " AND archived_at IS NOT NULL ORDER BY id DESC LIMIT ?)"
        )
        for where, args in (
            (old, (now - self.keep_days * 86400,)),
            (too_many, (*_args(key), *_args(key), self.keep_count)),
        ):
            yield execute(
                "DELETE FROM conversation_messages WHERE conversation IN"
                f" (SELECT id FROM conversations WHERE {where})",
                args,
            )
            yield execute(f"DELETE FROM conversations WHERE {where}", args)

    async def listing(self, key: SessionKey, now: float) -> list[dict[str, Any]]:
        """The chat's conversations, newest first, the current one first of all."""
        current = await self.current(key, now)
        session = await self._db.fetch_one(
            f"SELECT started_at, updated_at, turns FROM sessions WHERE {_KEY}", _args(key)
        )
        started, updated, turns = session if session is not None else (now, now, 0)
        named = await self._db.fetch_value("SELECT title FROM conversations WHERE id=?", (current,))
        if not named and session is not None:
            named = _title(await self._db.fetch_one(_FIRST, _args(key)))
        out = [_listed(current, started, updated, turns, named or "", True)]
        rows = await self._db.fetch_all(
            "SELECT id, started_at, updated_at, turns, title FROM conversations"
            f" WHERE {_KEY} AND archived_at IS NOT NULL ORDER BY id DESC LIMIT ?",
            (*_args(key), self.keep_count),
        )
        return out + [_listed(i, s, u, t, title, False) for i, s, u, t, title in rows]

    async def page(
        self, key: SessionKey, conversation: int | None, before: int | None, limit: int, now: float
    ) -> Page | None:
        """A page of one conversation (None: no such conversation in this chat)."""
        limit = max(1, min(limit, MAX_PAGE))
        current = await self.current(key, now)
        if conversation is None or conversation == current:
            return await self._current_page(key, current, before, limit)
        owned = await self._db.fetch_one(
            f"SELECT summary, started_at FROM conversations WHERE id=? AND {_KEY}"
            " AND archived_at IS NOT NULL",
            (conversation, *_args(key)),
        )
        if owned is None:
            return None
        rows = await self._db.fetch_all(
            "SELECT id, role, text, at, meta FROM conversation_messages WHERE conversation=?"
            " AND tenant=? AND id<? ORDER BY id DESC LIMIT ?",
            (conversation, key.tenant, before or 2**62, limit + 1),
        )
        more = len(rows) > limit
        messages = [message(*r) for r in reversed(rows[:limit])]
        return _paged(conversation, messages, more, str(owned[0]), float(owned[1]), False)

    async def _current_page(
        self, key: SessionKey, ident: int, before: int | None, limit: int
    ) -> Page:
        messages, more = await self.shown.page(key, ident, before, limit)
        session = await self._db.fetch_one(
            f"SELECT summary, started_at FROM sessions WHERE {_KEY}", _args(key)
        )
        summary, started = (str(session[0]), float(session[1])) if session else ("", 0.0)
        return _paged(ident, messages, more, summary, started, True)


_FIRST = (
    f"SELECT content, meta FROM session_messages WHERE {_KEY} AND role='user' ORDER BY id LIMIT 1"
)


def _failed_title(failures: Sequence[FailedRow]) -> str:
    """The title of a conversation none of whose turns was stored: its first question."""
    asked = next((f for f in failures if f.role == "user"), failures[0])
    return title_of(read_meta(asked.meta).get("text") or asked.text)


def _title(first: Any) -> str:
    """The title of a conversation from its first message (None: its turns were folded)."""
    if first is None:
        return "(earlier turns summarised)"
    info = read_meta(first[1])
    names = ", ".join(f["name"] for f in info.get("files", ()))
    return title_of(info.get("text") or names or first[0])


def _current(key: SessionKey, now: float) -> Unit[int]:
    """The current conversation's id, made when there is none (a racing maker's kept)."""
    found = yield fetch_one(_CURRENT, _args(key))
    if found is None:
        yield execute(
            "INSERT INTO conversations (tenant, channel, chat, started_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (*_args(key), now, now),
        )
        found = yield fetch_one(_CURRENT, _args(key))
    return int(found[0])


def _paged(
    ident: int, messages: list[dict[str, Any]], more: bool, summary: str, ts: float, current: bool
) -> Page:
    if not more and summary:
        opening = {"seq": 0, "role": "assistant", "text": summary, "ts": ts, "status": "summary"}
        messages.insert(0, opening)
    return Page(ident, messages, more, current)


def _listed(
    ident: int, started: float, updated: float, turns: int, title: str, current: bool
) -> dict[str, Any]:
    return {
        "id": ident,
        "started_at": started,
        "updated_at": updated,
        "turns": turns,
        "title": title,
        "current": current,
    }


def _args(key: SessionKey) -> tuple[str, str, str]:
    return (key.tenant, key.channel, key.chat)
