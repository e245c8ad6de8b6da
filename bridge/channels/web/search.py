"""The search of a web chat's conversations: in what the page shows of them.

`GET /api/conversations/search` (`bridge.channels.web.chats`) finds a text in
the chat's conversation titles and in every message the history shows
(`WebHistory.whole`): the person's words and the answers, a failed turn's
error, the slash commands sent from the page and their replies, reminders
and scheduled posts (a job's run as its post, never its prompt). The core's
search (`bridge.core.conversation_edits`) reads only the session and the
archive, so it missed the commands, the posts and the current conversation's
failed turns, and found a job's prompt the page does not show.

Each text is searched as the page shows it, through the tenant's masker of
now, so a value vaulted after it was said is neither shown nor found (the
number of hits tells nothing of it); only a text that holds the query as
stored is masked (`hit`: masking every message made a search of a large
chat hold the loop for most of a second, session 35's attacker pass), and a
tenant's searches run one at a time (`bridge.channels.web.chats`). Case
folded, newest conversation first,
one result per conversation with the number of matching messages and a
snippet around the first match (its `seq` null for a command or a post: it
has none). Only the asking tenant's chat is read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bridge.channels.web.history import WebHistory
from bridge.core.conversation_edits import (
    MAX_RESULTS,
    find,
    folded_query,
    snippet,
    span,
)
from bridge.core.sessions import SessionKey


def hit(
    message: dict[str, Any], q: str, shown: Callable[[str], str] = lambda text: text
) -> dict[str, Any] | None:
    """Where a message holds `q` as `shown` shows its text: {seq, role, snippet, match}
    (None: it does not) (pure). Only a text that holds `q` as stored is shown (masked)
    and searched again: masking is the search's cost (a value vaulted since it was
    stored is never found, the masked text no longer holds it)."""
    stored = str(message.get("text", ""))
    if find(stored, q) < 0:
        return None
    text = shown(stored)
    at = find(text, q)
    if at < 0:
        return None
    piece, match = snippet(text, at, span(text, at, q))
    return {
        "seq": message.get("seq"),
        "role": message["role"],
        "snippet": piece,
        "match": list(match),
    }


async def search(
    history: WebHistory, key: SessionKey, query: str, now: float
) -> list[dict[str, Any]]:
    """The chat's conversations whose title or shown messages hold `query`."""
    q = folded_query(query)
    shown = history.shown(key.tenant)
    entries = await history.entries(key)  # the command log, read once
    results: list[dict[str, Any]] = []
    for listed in await history.archive.listing(key, now):
        ident = int(listed["id"])
        messages = await history.whole(key, ident, entries, masked=False)
        if messages is None:  # deleted meanwhile
            continue
        hits = [h for h in (hit(m, q, shown) for m in messages) if h is not None]
        title = shown(str(listed["title"]))
        if not hits and find(title, q) < 0:
            continue
        found: dict[str, Any] = {
            "conversation": ident,
            "title": title,
            "current": bool(listed["current"]),
            "updated_at": listed["updated_at"],
            "hits": len(hits),
        }
        if hits:
            found |= hits[0]
        results.append(found)
        if len(results) >= MAX_RESULTS:
            break
    return results
