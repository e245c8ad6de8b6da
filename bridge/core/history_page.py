"""A page of a conversation as the web page shows it (for `bridge.core.conversations`).

A message is `{"seq", "role", "text", "ts", "status"}` plus, when there are
some, `files` (the chips of what the person sent: name, kind, MIME type,
size), `quote`, `tools` (an answer's tool cards, `bridge.core.shown`) and
`versions` (`{"index", "count", "edited"}` on the person's message of a turn
that was edited (`edited`: a version asked something else) or regenerated,
`bridge.core.versions`). The person's message shows
what they typed (`meta`), not the text the model was given; a stopped answer
is told by its status, its text without the stored mark; a failed turn
(`bridge.core.turn_failures`) shows the person's message and the failure
(status `error`, `seq` null: it is in no session), where it happened.
`archive_rows` is the same view, frozen for `conversation_messages` when a
conversation is archived.

The session's rows are read through the `Database` protocol (one SELECT
for the page's messages, one for their tool steps); the failed turns and
the versions are `bridge.core.turn_failures` / `bridge.core.versions`,
passed in (on the same `Database`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from bridge.core import turn_failures, versions
from bridge.core.running import STOPPED_MARK, is_stopped
from bridge.core.shown import page_files, read_meta, tool_cards
from bridge.core.turn_failures import FailedRow, TurnFailures
from bridge.core.versions import TurnVersions
from bridge.storage.protocol import Database
from bridge.storage.protocol import Row as DbRow
from bridge.storage.units import Unit, fetch_all
from bridge.types.session_key import SessionKey

SHOWN = "role IN ('user', 'assistant') AND tool_calls = ''"  # not the tool-call steps
NEWEST = 2**62


class Row(NamedTuple):
    id: int
    role: str
    content: str
    at: float
    turn: int
    meta: str


def _args(key: SessionKey) -> tuple[str, str, str]:
    return (key.tenant, key.channel, key.chat)


def unmarked(text: str) -> str:
    """A stopped answer without its mark (`bridge.core.running.stopped_text`)."""
    if not is_stopped(text):
        return text
    body = text[: -len(STOPPED_MARK)].rstrip()
    return body[:-1].rstrip() if body.endswith("…") else body


def message(seq: int | None, role: str, text: str, ts: float, meta: str) -> dict[str, Any]:
    """One page message from a stored row (its `meta` read, its text as shown)."""
    info = read_meta(meta)
    status = "done"
    if info.get("status") == "error":
        status = "error"
    elif role == "assistant" and is_stopped(text):
        status, text = "stopped", unmarked(text)
    if role == "user" and "text" in info:
        text = info["text"]
    out: dict[str, Any] = {"seq": seq, "role": role, "text": text, "ts": ts, "status": status}
    files = page_files(info)
    if files:
        out["files"] = files
    if info.get("quote"):
        out["quote"] = info["quote"]
    if info.get("tools"):
        out["tools"] = info["tools"]
    return out


_KEY = "tenant=? AND channel=? AND chat=?"
_SHOWN_ROWS = (
    "SELECT id, role, content, at, turn, meta FROM session_messages"
    f" WHERE {_KEY} AND {SHOWN} ORDER BY id"
)
_STEPS = (
    "SELECT turn, role, content, tool_calls, tool_call_id FROM session_messages"
    f" WHERE {_KEY} AND NOT ({SHOWN}) ORDER BY id"
)


class CurrentPage:
    """Pages of a chat's current conversation: the session's rows, their tool steps,
    failed turns and versions."""

    def __init__(self, db: Database, failures: TurnFailures, versions: TurnVersions) -> None:
        self._db = db
        self.failures = failures
        self.versions = versions

    async def page(
        self, key: SessionKey, conversation: int, before: int | None, limit: int
    ) -> tuple[list[dict[str, Any]], bool]:
        """Messages with seq < `before`, newest `limit` of them, oldest first; and
        whether older ones exist."""
        found = await self._db.fetch_all(
            "SELECT id, role, content, at, turn, meta FROM session_messages"
            f" WHERE {_KEY} AND {SHOWN} AND id<? ORDER BY id DESC LIMIT ?",
            (*_args(key), before or NEWEST, limit + 1),
        )
        more = len(found) > limit
        rows = [Row(*r) for r in reversed(found[:limit])]
        tools = await self._tools(key, {r.turn for r in rows if r.role == "assistant"})
        asked = [r.turn for r in rows if r.role == "user"]
        versions = await self.versions.shown(key, conversation, asked)
        out: list[tuple[tuple[int, int, int], dict[str, Any]]] = []
        for r in rows:
            shown = message(r.id, r.role, r.content, r.at, r.meta)
            if r.role == "assistant" and tools.get(r.turn):
                shown["tools"] = tools[r.turn]
            if r.role == "user" and r.turn in versions:
                index, count, edited = versions[r.turn]
                shown["versions"] = {"index": index, "count": count, "edited": edited}
            out.append(((r.id, 0, 0), shown))
        hi = before or NEWEST
        lo = 0 if not more else (rows[0].id if rows else hi)
        for f in await self.failures.between(conversation, key.tenant, lo, hi):
            out.append(((f.after, 1, f.id), message(None, f.role, f.text, f.at, f.meta)))
        return [m for _, m in sorted(out, key=lambda pair: pair[0])], more

    async def _tools(self, key: SessionKey, turns: set[int]) -> dict[int, list[dict[str, Any]]]:
        if not turns:
            return {}
        marks = ",".join("?" * len(turns))
        steps = await self._db.fetch_all(
            "SELECT turn, role, content, tool_calls, tool_call_id FROM session_messages"
            f" WHERE {_KEY} AND turn IN ({marks}) AND NOT ({SHOWN}) ORDER BY id",
            (*_args(key), *sorted(turns)),
        )
        return _cards(steps)

    async def archived(self, conversation: int, tenant: str) -> None:
        """A conversation was deleted: its failed turns and versions go (one unit)."""
        await self._db.atomic(forgotten(conversation, tenant))


def failed(conversation: int, tenant: str) -> Unit[list[FailedRow]]:
    """A conversation's failed turns, oldest first (read in the archive's unit)."""
    return (yield from turn_failures.between(conversation, tenant, 0, NEWEST))


def forgotten(conversation: int, tenant: str) -> Unit[None]:
    """A conversation's failed turns and versions go (archived or deleted)."""
    yield from turn_failures.forgotten(conversation, tenant)
    yield from versions.forgotten(conversation, tenant)


def archive_rows(
    key: SessionKey, failed: Iterable[FailedRow]
) -> Unit[list[tuple[str, str, float, str]]]:
    """The conversation as `conversation_messages` keeps it: (role, text, at, meta),
    in order, answers with their tool cards, the `failed` turns in place; inside the
    caller's unit."""
    rows = [Row(*r) for r in (yield fetch_all(_SHOWN_ROWS, _args(key)))]
    tools = _cards((yield fetch_all(_STEPS, _args(key))))
    out: list[tuple[tuple[int, int, int], tuple[str, str, float, str]]] = []
    for r in rows:
        meta = r.meta
        if r.role == "assistant" and tools.get(r.turn):
            meta = _with_tools(meta, tools[r.turn])
        out.append(((r.id, 0, 0), (r.role, r.content, r.at, meta)))
    for f in failed:
        out.append(((f.after, 1, f.id), (f.role, f.text, f.at, f.meta)))
    return [row for _, row in sorted(out, key=lambda pair: pair[0])]


def _cards(steps: Sequence[DbRow]) -> dict[int, list[dict[str, Any]]]:
    by_turn: dict[int, list[tuple[str, str, str, str]]] = {}
    for turn, *step in steps:
        by_turn.setdefault(int(turn), []).append((step[0], step[1], step[2], step[3]))
    return {t: cards for t, s in by_turn.items() if (cards := tool_cards(s))}


def _with_tools(meta: str, tools: list[dict[str, Any]]) -> str:
    info = read_meta(meta)
    info["tools"] = tools
    return json.dumps(info, ensure_ascii=False, separators=(",", ":"))
