"""Past conversations, kept readable after `/reset`: the archive and its pages.

Every chat has one current conversation (the session, `bridge.core.sessions`)
and any number of archived ones. `archive(key, now)` runs inside the session
store's transaction whenever a session is cleared (`/reset`, idle expiry):
it copies the person's messages and the final answers (not the tool steps)
and the summary into `conversation_messages` / `conversations`, and opens a
new current conversation with a new id. `page(...)` reads either kind
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

import sqlite3
from dataclasses import dataclass
from typing import Any, Protocol

from bridge.core.history_page import CurrentPage, message
from bridge.core.shown import read_meta

TITLE_CHARS = 60
MAX_PAGE = 200


class SessionKey(Protocol):
    """A chat's key (`bridge.core.sessions.SessionKey`, which makes this archive)."""

    @property
    def tenant(self) -> str: ...

    @property
    def channel(self) -> str: ...

    @property
    def chat(self) -> str: ...


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


class ConversationArchive:
    def __init__(
        self, conn: sqlite3.Connection, keep_days: float = 90.0, keep_count: int = 100
    ) -> None:
        self._db = conn
        self.keep_days, self.keep_count = keep_days, keep_count
        self.shown = CurrentPage(conn)  # also the failed turns and the versions

    def current(self, key: SessionKey, now: float) -> int:
        """The current conversation's id (made on first use; another process may race)."""
        query = (
            "SELECT id FROM conversations WHERE tenant=? AND channel=? AND chat=?"
            " AND archived_at IS NULL"
        )
        found = self._db.execute(query, _args(key)).fetchone()
        if found is None:
            self._db.execute(
                "INSERT OR IGNORE INTO conversations (tenant, channel, chat, started_at,"
                " updated_at) VALUES (?, ?, ?, ?, ?)",
                (*_args(key), now, now),
            )
            found = self._db.execute(query, _args(key)).fetchone()
        return int(found[0])

    def archive(self, key: SessionKey, now: float) -> None:
        """Keep the session about to be cleared; inside the caller's transaction."""
        db = self._db
        row = db.execute(
            "SELECT started_at, updated_at, turns, summary FROM sessions"
            " WHERE tenant=? AND channel=? AND chat=?",
            _args(key),
        ).fetchone()
        if row is None:
            return  # nothing said since the last reset: the current conversation stays
        started, updated, turns, summary = row
        ident = self.current(key, now)
        db.executemany(
            "INSERT INTO conversation_messages (conversation, tenant, role, text, at, meta)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [(ident, key.tenant, *r) for r in self.shown.archive_rows(key, ident)],
        )
        db.execute(
            "UPDATE conversations SET started_at=?, updated_at=?, turns=?,"
            " title=COALESCE(NULLIF(title, ''), ?), summary=?, archived_at=? WHERE id=?",
            (started, updated, turns, self._title(key), summary, now, ident),
        )
        self.current(key, now)
        self._prune(key, now)

    def _title(self, key: SessionKey) -> str:
        first = self._db.execute(
            "SELECT content, meta FROM session_messages WHERE tenant=? AND channel=? AND chat=?"
            " AND role='user' ORDER BY id LIMIT 1",
            _args(key),
        ).fetchone()
        if first is None:
            return "(earlier turns summarised)"
        info = read_meta(first[1])
        names = ", ".join(f["name"] for f in info.get("files", ()))
        return title_of(info.get("text") or names or first[0])

    def _prune(self, key: SessionKey, now: float) -> None:
        """Drop archived conversations past `keep_days`, and this chat's past `keep_count`."""
        old = " archived_at IS NOT NULL AND archived_at < ?"
        too_many = (
            " tenant=? AND channel=? AND chat=? AND archived_at IS NOT NULL AND id NOT IN"
            " (SELECT id FROM conversations WHERE tenant=? AND channel=? AND chat=?"
            " AND archived_at IS NOT NULL ORDER BY id DESC LIMIT ?)"
        )
        for where, args in (
            (old, (now - self.keep_days * 86400,)),
            (too_many, (*_args(key), *_args(key), self.keep_count)),
        ):
            self._db.execute(
                "DELETE FROM conversation_messages WHERE conversation IN"
                f" (SELECT id FROM conversations WHERE {where})",
                args,
            )
            self._db.execute(f"DELETE FROM conversations WHERE {where}", args)

    def listing(self, key: SessionKey, now: float) -> list[dict[str, Any]]:
        """The chat's conversations, newest first, the current one first of all."""
        current = self.current(key, now)
        session = self._db.execute(
            "SELECT started_at, updated_at, turns FROM sessions"
            " WHERE tenant=? AND channel=? AND chat=?",
            _args(key),
        ).fetchone()
        started, updated, turns = session if session is not None else (now, now, 0)
        (named,) = self._db.execute(
            "SELECT title FROM conversations WHERE id=?", (current,)
        ).fetchone()
        title = named or (self._title(key) if session is not None else "")
        out = [_listed(current, started, updated, turns, title, True)]
        rows = self._db.execute(
            "SELECT id, started_at, updated_at, turns, title FROM conversations"
            " WHERE tenant=? AND channel=? AND chat=? AND archived_at IS NOT NULL"
            " ORDER BY id DESC LIMIT ?",
            (*_args(key), self.keep_count),
        ).fetchall()
        return out + [_listed(i, s, u, t, title, False) for i, s, u, t, title in rows]

    def page(
        self, key: SessionKey, conversation: int | None, before: int | None, limit: int, now: float
    ) -> Page | None:
        """A page of one conversation (None: no such conversation in this chat)."""
        limit = max(1, min(limit, MAX_PAGE))
        current = self.current(key, now)
        if conversation is None or conversation == current:
            return self._current_page(key, current, before, limit)
        owned = self._db.execute(
            "SELECT summary, started_at FROM conversations"
            " WHERE id=? AND tenant=? AND channel=? AND chat=?"
            " AND archived_at IS NOT NULL",
            (conversation, *_args(key)),
        ).fetchone()
        if owned is None:
            return None
        rows = self._db.execute(
            "SELECT id, role, text, at, meta FROM conversation_messages WHERE conversation=?"
            " AND tenant=? AND id<? ORDER BY id DESC LIMIT ?",
            (conversation, key.tenant, before or 2**62, limit + 1),
        ).fetchall()
        more = len(rows) > limit
        messages = [message(*r) for r in reversed(rows[:limit])]
        return _paged(conversation, messages, more, str(owned[0]), float(owned[1]), False)

    def _current_page(self, key: SessionKey, ident: int, before: int | None, limit: int) -> Page:
        messages, more = self.shown.page(key, ident, before, limit)
        session = self._db.execute(
            "SELECT summary, started_at FROM sessions WHERE tenant=? AND channel=? AND chat=?",
            _args(key),
        ).fetchone()
        summary, started = (str(session[0]), float(session[1])) if session else ("", 0.0)
        return _paged(ident, messages, more, summary, started, True)


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
