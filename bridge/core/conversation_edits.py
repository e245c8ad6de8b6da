"""What a person does to their list of conversations: rename one, delete one, search them.

`rename` gives a conversation of this chat (the current one too) a title of
its own, kept when it is archived (`bridge.core.conversations`). `delete`
removes an archived conversation with its messages; the current one is
deleted by resetting the chat first (the caller's job: it must stop the
running answer and go through the core), which archives it, then deleting
that. `search` finds a text in the chat's conversations, their titles and
what each message shows (the person's words, not the model's view), case
folded, newest conversation first, one hit per conversation with a snippet
around its first match and the number of matching messages. Every call is
scoped to one (tenant, channel, chat): an id of another chat is unknown.
Runs on the `Database` protocol: a rename is one UPDATE that checks the
owner; a delete is one unit (`Database.atomic`) whose first DELETE checks
the owner and that it is archived. What the conversation said is also taken
out of the search index (`/recall`, the model's recall tool, `roost recall`,
an export's history.jsonl): `unindex` is handed the chat and the
conversation's time span (from its start to its archiving, when it was the
chat's current one) before its rows go, so a delete cut short leaves the
conversation listed (delete it again), never its words findable without it.
The chat's posts made in its window (reminders, job answers) go in the same unit,
and the files its messages carried leave the tenant's inbox once it is committed (a
tool, and so the model, could read them for `attachment_keep_hours` after).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

from bridge.core.conversations import ConversationArchive
from bridge.core.history_page import SHOWN, message
from bridge.core.post_window import POST_WINDOW, post_window
from bridge.core.shown import read_meta
from bridge.storage.protocol import Database
from bridge.storage.units import Unit, execute, fetch_one
from bridge.types.masked import TextMask
from bridge.types.session_key import SessionKey

MAX_TITLE = 120
MAX_QUERY = 200
MAX_RESULTS = 50
BEFORE, AFTER = 40, 80  # characters of a snippet around the match


# the chat and a conversation's span in seconds (started, archived): its indexed words go
Unindex = Callable[[SessionKey, float, float], Awaitable[object]]


class EditError(ValueError):
    """A title or query that cannot be used, said so the person can fix it."""


class Hit(NamedTuple):
    seq: int | None
    role: str
    snippet: str
    match: tuple[int, int]  # where the query is inside the snippet


def clean_title(title: str) -> str:
    line = " ".join(title.split())
    if not line:
        raise EditError("the title is empty")
    if len(line) > MAX_TITLE:
        raise EditError(f"a title has at most {MAX_TITLE} characters")
    return line


def snippet(text: str, start: int, length: int) -> tuple[str, tuple[int, int]]:
    """The text around [start, start+length), on one line, and the match's place in it."""
    lo, hi = max(0, start - BEFORE), min(len(text), start + length + AFTER)
    head = "…" if lo > 0 else ""
    tail = "…" if hi < len(text) else ""
    piece = text[lo:hi].replace("\n", " ")
    at = len(head) + start - lo
    return head + piece + tail, (at, at + length)


def find(text: str, folded_query: str) -> int:
    """Where `folded_query` starts in `text`, case folded (-1: nowhere). Case folding may
    change lengths (ß -> ss): the place is found on the folded text and mapped back."""
    folded = text.casefold()
    at = folded.find(folded_query)
    if at < 0 or len(folded) == len(text):
        return at
    size = 0
    for i, ch in enumerate(text):
        if size >= at:
            return i
        size += len(ch.casefold())
    return -1


_OWNED = "id=? AND tenant=? AND channel=? AND chat=?"


def _masked_snippet(
    mask: TextMask, text: str, match: tuple[int, int], folded_query: str
) -> tuple[str, tuple[int, int]]:
    """The snippet through the masker, and where the query is in it now (masking changes
    lengths; (0, 0) when the query was part of what is masked)."""
    shown = mask.mask(text)
    if shown == text:
        return text, match
    at = find(shown, folded_query)
    return shown, (at, at + len(folded_query)) if at >= 0 else (0, 0)


class ConversationEdits:
    def __init__(
        self,
        db: Database,
        archive: ConversationArchive,
        masks: Callable[[str], TextMask],
        unindex: Unindex | None = None,
        inbox: Callable[[str], Path] | None = None,
    ) -> None:
        """`masks`: a tenant's masker (its vault's values), for what is stored; `unindex`:
        takes a deleted conversation's words out of the search index (none wired: no
        index); `inbox`: a tenant's inbox, where its messages' files are (none: kept)."""
        self._db, self._archive, self._masks = db, archive, masks
        self._unindex, self._inbox = unindex, inbox

    async def rename(self, key: SessionKey, ident: int, title: str) -> str | None:
        """The title now given, through the tenant's masker like every stored text (None:
        no such conversation in this chat)."""
        line = self._masks(key.tenant).mask(clean_title(title))
        changed = await self._db.execute(
            f"UPDATE conversations SET title=? WHERE {_OWNED}", (line, ident, *_args(key))
        )
        return line if changed else None

    async def delete(self, key: SessionKey, ident: int) -> bool:
        """Delete an archived conversation of this chat with its messages, and its words
        from the search index (first: a delete cut short can be run again)."""
        span = await self._db.fetch_one(
            f"SELECT started_at, archived_at FROM conversations WHERE {_OWNED}"
            " AND archived_at IS NOT NULL",
            (ident, *_args(key)),
        )
        if span is None:
            return False
        if self._unindex is not None:
            await self._unindex(key, float(span[0]), float(span[1]))
        files = await self._files(key, ident)
        if not await self._db.atomic(_deleted(key, ident)):
            return False
        await self._archive.shown.archived(ident, key.tenant)  # its failed turns and versions
        if self._inbox is not None:
            removed_files(self._inbox(key.tenant), files)
        return True

    async def _files(self, key: SessionKey, ident: int) -> list[str]:
        """The inbox names of the files the conversation's messages carried."""
        rows = await self._db.fetch_all(
            "SELECT meta FROM conversation_messages WHERE conversation=? AND tenant=?"
            " AND meta != ''",
            (ident, key.tenant),
        )
        return [str(f["ref"]) for (meta,) in rows for f in read_meta(str(meta)).get("files", ())]

    async def search(self, key: SessionKey, query: str, now: float) -> list[dict[str, Any]]:
        """Conversations of this chat whose title or messages hold `query`."""
        q = folded_query(query)
        mask = self._masks(key.tenant)  # a value put in the vault after it was said, too
        results = []
        for listed in await self._archive.listing(key, now):
            ident, current = int(listed["id"]), bool(listed["current"])
            rows = await (self._current_rows(key) if current else self._archived_rows(key, ident))
            hits = [h for h in (_hit(r, q) for r in rows) if h is not None]
            in_title = find(str(listed["title"]), q) >= 0
            if not hits and not in_title:
                continue
            found: dict[str, Any] = {
                "conversation": ident,
                "title": mask.mask(str(listed["title"])),
                "current": current,
                "updated_at": listed["updated_at"],
                "hits": len(hits),
            }
            if hits:
                first = hits[0]
                shown, match = _masked_snippet(mask, first.snippet, first.match, q)
                found |= {"seq": first.seq, "role": first.role, "snippet": shown}
                found["match"] = list(match)
            results.append(found)
            if len(results) >= MAX_RESULTS:
                break
        return results

    async def _current_rows(self, key: SessionKey) -> Iterable[dict[str, Any]]:
        rows = await self._db.fetch_all(
            "SELECT id, role, content, at, meta FROM session_messages"
            f" WHERE tenant=? AND channel=? AND chat=? AND {SHOWN} ORDER BY id",
            _args(key),
        )
        return (message(*row) for row in rows)

    async def _archived_rows(self, key: SessionKey, ident: int) -> Iterable[dict[str, Any]]:
        rows = await self._db.fetch_all(
            "SELECT id, role, text, at, meta FROM conversation_messages"
            " WHERE conversation=? AND tenant=? ORDER BY id",
            (ident, key.tenant),
        )
        return (message(*row) for row in rows)


def _deleted(key: SessionKey, ident: int) -> Unit[bool]:
    """The conversation's row (if it is this chat's and archived), then its messages and
    the chat's posts of its window (reminders, job answers: `chat_posts`, which a page
    places by the time they were made, from the previous conversation's archiving to this
    one's; left, they moved into the next conversation's page)."""
    window = yield fetch_one(
        "SELECT (SELECT MAX(archived_at) FROM conversations WHERE tenant=? AND channel=?"
        " AND chat=? AND id < ? AND archived_at IS NOT NULL), archived_at"
        f" FROM conversations WHERE {_OWNED} AND archived_at IS NOT NULL",
        (*_args(key), ident, ident, *_args(key)),
    )
    gone = yield execute(
        f"DELETE FROM conversations WHERE {_OWNED} AND archived_at IS NOT NULL",
        (ident, *_args(key)),
    )
    if gone:
        yield execute(
            "DELETE FROM conversation_messages WHERE conversation=? AND tenant=?",
            (ident, key.tenant),
        )
        lo, hi = window
        posts = (*_args(key), *post_window(float(lo or 0) * 1000, float(hi) * 1000))
        where = f"tenant=? AND channel=? AND chat=? AND {POST_WINDOW}"
        yield execute(
            f"DELETE FROM outbox_parts WHERE entry IN (SELECT id FROM outbox WHERE {where})", posts
        )
        yield execute(f"DELETE FROM outbox WHERE {where}", posts)
    return bool(gone)


def _args(key: SessionKey) -> tuple[str, str, str]:
    return (key.tenant, key.channel, key.chat)


def _hit(shown: dict[str, Any], q: str) -> Hit | None:
    text = str(shown["text"])
    at = find(text, q)
    if at < 0:
        return None
    piece, match = snippet(text, at, span(text, at, q))
    return Hit(shown["seq"], str(shown["role"]), piece, match)


def folded_query(query: str) -> str:
    """A search's query on one line, case folded (EditError when empty or too long)."""
    q = " ".join(query.split()).casefold()
    if not q:
        raise EditError("say what to look for")
    if len(q) > MAX_QUERY:
        raise EditError(f"search for at most {MAX_QUERY} characters")
    return q


def span(text: str, at: int, q: str) -> int:
    """How many characters of `text` from `at` the folded query covers."""
    size, n = 0, 0
    while at + n < len(text) and size < len(q):
        size += len(text[at + n].casefold())
        n += 1
    return n


_INBOX_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,80}$")  # as the inbox names them


def removed_files(inbox: Path, refs: Iterable[str]) -> int:
    """Remove the inbox's files named `refs`: plain generated names only, regular files
    or links (a link itself, never what it points to); how many went."""
    count = 0
    for ref in refs:
        if not _INBOX_NAME.fullmatch(ref):
            continue
        path = inbox / ref
        try:
            if stat.S_ISDIR(os.lstat(path).st_mode):
                continue
            path.unlink()
        except OSError:  # gone already (swept after attachment_keep_hours), or not ours
            continue
        count += 1
    return count
