"""A page of a web chat's history in time order, with what the session does not hold.

The session (`bridge.core.conversations`) keeps the person's turns. Three
things a person saw on the page are elsewhere, and a reload showed them
wrong or not at all:

- proactive posts (reminders, job answers, `roost send --to web:C`) are in
  the outbox: each is placed among the messages by the time it was made,
  `"kind": "proactive"`, `"outbox"`: its entry id, `"key"`;
- a scheduled job's turn is stored in the session like the person's own
  (its `msg_id` is `job:<id>:<slot>`, the key of the post it made): its
  prompt is not shown (the person did not type it), its answer shows once,
  as the post (the outbox entry of that key when it is still kept, else
  the stored answer, marked `proactive` with `"job"`); an archived
  conversation keeps no msg_id, but a run's prompt row keeps the run's msg_id
  in its `meta` (`bridge.core.shown.run_of`), and is told by it (its answer is
  the row after it). Only the rows before an archive's first marked one (its
  runs stored by an older roost) tell a run by its post (`is_run_of`: the
  job's text, the answer, the time), while the outbox keeps it: text that a
  person may type too (session 36's attacker pass: the person's own turn of
  the job's text took the run's place);
- a scheduled job's turn that failed is not kept as a failed turn (the core
  skips it: the page showed only the job's failure notice, a post like any
  other). A failed run an older roost kept (the job's prompt as the person's
  message, then the error, without its msg_id) still shows so: telling it
  from a message the person typed with the same text cannot be done safely
  (session 35's attacker pass: matching by the job's text and time hid the
  person's own failed messages);
- the slash commands the page sent and their replies (`commandlog`):
  `"kind": "command"`, `seq` null, the reply with its `actions` and
  `settled` when the offer was taken since; at most the page's `limit`
  commands (the newest of its range);
- the one-tap offers under a model answer (`commandlog`, kept with the time
  the answer was stored): the answer of that time gets its `actions` back,
  `settled` once one was taken.

A page covers a time range: up to the time of the message `before` (all
later when not paging), from its first message's time (all earlier when
it is the oldest page); a conversation covers the time from the previous
conversation's archiving (the chat's first: from the start) to its own.
Only reads; the rows read are the tenant's, channel's and chat's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from bridge.channels.web.commandlog import CommandLog, Sent
from bridge.core.shown import RUN_KEY, run_of
from bridge.schedule.runtime import JOB_MARK, chat_posts
from bridge.storage.protocol import Database
from bridge.types.session_key import SessionKey

JOB_PREFIX = "job:"
MAX_POSTS = 200  # proactive posts on one page


def _args(key: SessionKey) -> tuple[str, str, str]:
    return (key.tenant, key.channel, key.chat)


_KEY = "tenant=? AND channel=? AND chat=?"


def merged(messages: Sequence[dict[str, Any]], extras: Sequence[dict[str, Any]]) -> list[Any]:
    """`messages` in their order with `extras` (each with a `ts`) placed by time: an
    extra goes before the first message made after it (pure)."""
    out: list[dict[str, Any]] = []
    rest = sorted(extras, key=lambda e: float(e["ts"]))
    i = 0
    for m in messages:
        while i < len(rest) and float(rest[i]["ts"]) < float(m["ts"]):
            out.append(rest[i])
            i += 1
        out.append(m)
    return out + rest[i:]


def post_message(post: dict[str, Any]) -> dict[str, Any]:
    """An outbox entry as a page message."""
    out = {
        "seq": None,
        "role": "assistant",
        "text": post["text"],
        "ts": post["at_ms"] / 1000,
        "status": "done",
        "kind": "proactive",
        "outbox": post["id"],
        "key": post["key"],
    }
    job = job_of(str(post["key"]))
    if job:
        out["job"] = job
    return out


def job_of(msg_id: str) -> str:
    """The job id of a run's msg_id / post key `job:<id>:<slot>` ('' for any other)."""
    if not msg_id.startswith(JOB_PREFIX):
        return ""
    return msg_id[len(JOB_PREFIX) :].partition(":")[0]


def command_messages(sent: Sent) -> list[dict[str, Any]]:
    """A command and its reply as two page messages."""
    asked = {"seq": None, "role": "user", "text": sent.asked, "ts": sent.at, "status": "done"}
    reply: dict[str, Any] = {
        "seq": None,
        "role": "assistant",
        "text": sent.reply,
        "ts": sent.at,
        "status": "done",
    }
    if sent.actions:
        reply["actions"] = [dict(a) for a in sent.actions]
        reply["settled"] = sent.settled
    return [{**asked, "kind": "command"}, {**reply, "kind": "command"}]


RUN_S = 600  # a run's post is made this soon after its answer was stored, at most


def is_run_of(post: dict[str, Any], asked: dict[str, Any], answer: dict[str, Any]) -> bool:
    """Whether a person's message and its answer of an archived conversation (which
    keeps no msg_id) are the run of a job that made `post`: the post names the job's
    text (`job_header`: its first 40 characters) as the message, opens its second line
    with the answer, and was made within `RUN_S` after it (pure)."""
    head, _, body = str(post["text"]).partition("\n")
    said, text = str(answer["text"]), str(asked["text"])
    if not job_of(str(post["key"])) or not said or not body.startswith(said[:200]):
        return False
    named = head.removeprefix(JOB_MARK).rsplit(" (job ", 1)[0].removesuffix("…")
    made = post["at_ms"] / 1000 - float(answer["ts"])
    return bool(named) and " ".join(text.split()).startswith(named) and -1 <= made <= RUN_S


def archived_runs(
    messages: list[dict[str, Any]], posts: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], set[str]]:
    """An archived page's job runs (by `is_run_of`) as their posts, prompts left out;
    and the keys of the posts shown so (pure). Only for an archive whose runs carry
    no mark (`Timeline._archived`): text a person may type too decides here."""
    out: list[dict[str, Any]] = []
    used: set[str] = set()
    i = 0
    while i < len(messages):
        m = messages[i]
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        if m["role"] == "user" and nxt is not None and nxt["role"] == "assistant":
            post = next((p for p in posts if p["key"] not in used and is_run_of(p, m, nxt)), None)
            if post is not None:
                used.add(str(post["key"]))
                out.append({**post_message(post), "ts": nxt["ts"]})
                i += 2
                continue
        out.append(m)
        i += 1
    return out, used


def as_posts(
    messages: list[dict[str, Any]], runs: dict[int, str], keyed: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """The messages less each job run's prompt (`runs`: seq -> the run's msg_id), its
    answer as the run's post: the outbox entry of that key when it is still kept
    (`keyed`), else the stored answer marked `proactive` with its `job` (pure)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        run = runs.get(m["seq"]) if isinstance(m.get("seq"), int) else None
        if run is None:
            out.append(m)
        elif m["role"] == "assistant":
            post = keyed.get(run)
            if post is not None:
                out.append({**post_message(post), "ts": m["ts"]})
            else:
                out.append({**m, "seq": None, "kind": "proactive", "job": job_of(run)})
    return out


SAME_S = 0.001  # an answer's stored time, as kept with its offers (a float's round trip)


def with_offers(messages: list[dict[str, Any]], offers: Sequence[Sent]) -> list[dict[str, Any]]:
    """The messages, a model answer with the one-tap offers kept for it (an offer entry's
    `answer`: the time that answer was stored) (pure)."""
    if not offers:
        return messages
    out: list[dict[str, Any]] = []
    for m in messages:
        sent = None
        if m["role"] == "assistant" and not m.get("kind") and m.get("status") == "done":
            sent = next(
                (o for o in offers if o.answer is not None and abs(o.answer - m["ts"]) < SAME_S),
                None,
            )
        if sent is not None:
            m = {**m, "actions": [dict(a) for a in sent.actions], "settled": sent.settled}
        out.append(m)
    return out


class Timeline:
    """The extras of a history page, read from the database (and the command log)."""

    def __init__(self, db: Database, commands: CommandLog | None = None) -> None:
        self._db = db
        self.commands = commands

    async def conversations(self, key: SessionKey) -> list[int]:
        rows = await self._db.fetch_all(f"SELECT id FROM conversations WHERE {_KEY}", _args(key))
        return [int(r[0]) for r in rows]

    async def newest_post(self, key: SessionKey) -> int:
        """The id of the chat's newest outbox entry (0: none): a page showing the current
        conversation listens for what comes after it."""
        found = await self._db.fetch_value(f"SELECT MAX(id) FROM outbox WHERE {_KEY}", _args(key))
        return int(found) if found is not None else 0

    async def _window(self, key: SessionKey, conversation: int) -> tuple[float, float]:
        """The conversation's time range, in seconds."""
        lo = await self._db.fetch_value(
            f"SELECT MAX(archived_at) FROM conversations WHERE {_KEY} AND id < ?"
            " AND archived_at IS NOT NULL",
            (*_args(key), conversation),
        )
        hi = await self._db.fetch_value(
            f"SELECT archived_at FROM conversations WHERE {_KEY} AND id = ?",
            (*_args(key), conversation),
        )
        return (float(lo) if lo is not None else 0.0, float(hi) if hi is not None else math.inf)

    async def _at(self, key: SessionKey, current: bool, seq: int) -> float:
        """When the message `seq` was stored (inf when there is none)."""
        if current:
            sql = f"SELECT at FROM session_messages WHERE {_KEY} AND id = ?"
            at = await self._db.fetch_value(sql, (*_args(key), seq))
        else:
            sql = "SELECT at FROM conversation_messages WHERE tenant = ? AND id = ?"
            at = await self._db.fetch_value(sql, (key.tenant, seq))
        return float(at) if at is not None else math.inf

    async def _runs(self, key: SessionKey, seqs: list[int]) -> dict[int, str]:
        """seq -> msg_id of the messages that a scheduled job's run stored."""
        if not seqs:
            return {}
        marks = ",".join("?" * len(seqs))
        rows = await self._db.fetch_all(
            f"SELECT id, msg_id FROM session_messages WHERE {_KEY} AND id IN ({marks})"
            " AND msg_id LIKE 'job:%'",
            (*_args(key), *seqs),
        )
        return {int(r[0]): str(r[1]) for r in rows}

    async def _keyed(self, key: SessionKey, keys: set[str]) -> dict[str, dict[str, Any]]:
        if not keys:
            return {}
        marks = ",".join("?" * len(keys))
        rows = await self._db.fetch_all(
            f"SELECT id, key, text, created_ms FROM outbox WHERE {_KEY} AND key IN ({marks})"
            " AND state != 'dead'",
            (*_args(key), *sorted(keys)),
        )
        return {str(r[1]): {"id": r[0], "key": r[1], "text": r[2], "at_ms": r[3]} for r in rows}

    async def page(
        self,
        key: SessionKey,
        conversation: int,
        current: bool,
        messages: list[dict[str, Any]],
        more: bool,
        before: int | None,
        limit: int | None = None,
        entries: Sequence[Sent] | None = None,
    ) -> list[dict[str, Any]]:
        """The page's `messages` with the job runs shown as posts, and the posts and
        commands of its time range placed among them (the newest `limit` commands), the
        answers with their offers. `entries`: the chat's command log, when read already."""
        lo, hi = await self._window(key, conversation)
        if more and messages:  # from where the next older page ends: its `before`
            first = next((m for m in messages if isinstance(m.get("seq"), int)), messages[0])
            lo = max(lo, float(first["ts"]))
        if before is not None:
            hi = min(hi, await self._at(key, current, before))
        posts = await chat_posts(
            self._db, *_args(key), lo * 1000, None if math.isinf(hi) else hi * 1000, MAX_POSTS
        )
        if current:
            shown, runs = await self._without_prompts(key, messages)
        else:
            shown, runs = await self._archived(key, conversation, messages, posts)
        extras = [post_message(p) for p in posts if p["key"] not in runs]
        if entries is None and self.commands is not None:
            entries = await self.commands.entries(key)
        if entries:
            mine = [sent for sent in entries if sent.conversation == conversation]
            shown = with_offers(shown, [sent for sent in mine if sent.answer is not None])
            ranged = [sent for sent in mine if sent.answer is None and lo <= sent.at < hi]
            for sent in ranged[-limit:] if limit else ranged:
                extras.extend(command_messages(sent))
        return merged(shown, extras)

    async def answered_at(self, key: SessionKey, msg_id: str) -> float | None:
        """When the session stored the answer of the turn `msg_id` (None: not stored)."""
        at = await self._db.fetch_value(
            f"SELECT at FROM session_messages WHERE {_KEY} AND msg_id = ?"
            " AND role = 'assistant' AND tool_calls = '' ORDER BY id DESC LIMIT 1",
            (*_args(key), msg_id),
        )
        return float(at) if at is not None else None

    async def _archived(
        self,
        key: SessionKey,
        conversation: int,
        messages: list[dict[str, Any]],
        posts: list[dict[str, Any]],
    ) -> tuple[list[dict[str, Any]], set[str]]:
        """An archived page with its job runs as their posts: by the mark each run's
        prompt row keeps (`run_of`); the rows stored before the conversation's first
        marked one (by an older roost: all of an archive without marks, the start of
        one that was open during the upgrade) by the runs' text (`archived_runs`)."""
        first = await self._first_mark(key.tenant, conversation)
        if first is None:
            return archived_runs(messages, posts)
        older: list[dict[str, Any]] = []
        newer: list[dict[str, Any]] = []
        for m in messages:
            seq = m.get("seq")
            (older if isinstance(seq, int) and seq < first else newer).append(m)
        marks = await self._marks(key.tenant, conversation, messages)
        runs = set(marks.values())
        out, matched = archived_runs(older, [p for p in posts if p["key"] not in runs])
        out += as_posts(newer, marks, await self._keyed(key, runs))
        return out, runs | matched

    async def _marks(
        self, tenant: str, conversation: int, messages: list[dict[str, Any]]
    ) -> dict[int, str]:
        """seq -> the job run's msg_id, for the archived rows of a run: its prompt (marked,
        `run_of`) and the answer after it (also when the prompt is on the page before)."""
        seqs = [m["seq"] for m in messages if isinstance(m.get("seq"), int)]
        if not seqs:
            return {}
        rows = await self._db.fetch_all(  # the page's rows and the one before them, newest first
            "SELECT id, role, meta FROM conversation_messages WHERE conversation = ?"
            " AND tenant = ? AND id <= ? ORDER BY id DESC LIMIT ?",
            (conversation, tenant, max(seqs), len(seqs) + 1),
        )
        out: dict[int, str] = {}
        prompt = ""  # the run whose prompt is the row before
        for ident, role, meta in reversed(rows):
            if role == "user":
                prompt = run_of(str(meta or ""))
                if prompt:
                    out[int(ident)] = prompt
            else:
                if prompt:
                    out[int(ident)] = prompt
                prompt = ""
        return out

    async def _first_mark(self, tenant: str, conversation: int) -> int | None:
        """The first row of the archived conversation stored with a run's mark (None: an
        older roost stored all of it): from it on every run was stored so, and no text
        decides which turn is a run."""
        found = await self._db.fetch_value(
            "SELECT MIN(id) FROM conversation_messages WHERE conversation = ? AND tenant = ?"
            " AND role = 'user' AND meta LIKE ?",
            (conversation, tenant, f'%"{RUN_KEY}":"{JOB_PREFIX}%'),
        )
        return int(found) if found is not None else None

    async def _without_prompts(
        self, key: SessionKey, messages: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], set[str]]:
        """The messages less a job run's prompt, its answer as the run's post; and the
        keys of the posts shown so."""
        seqs = [m["seq"] for m in messages if isinstance(m.get("seq"), int) and m["seq"] > 0]
        runs = await self._runs(key, seqs)
        keyed = await self._keyed(key, set(runs.values()))
        return as_posts(messages, runs, keyed), set(runs.values())
