"""The web page's slash commands and their replies, kept for its history.

A command (`/memory`, `/remind …`, `/tool save …`) is answered by the core
without a turn: nothing of it is in the session, so a reload lost it. The
web channel keeps each command the page sent and the reply it got here, per
tenant and chat, with the conversation it was sent in and when
(`CommandLog.add`), masked by the tenant's masker before it is written;
`/api/history` places them among the conversation's messages by time
(`bridge.channels.web.timeline`). A reply's one-tap actions are kept; an
action whose command was sent afterwards is `settled` (the offer was taken).
A model answer's one-tap offers ("Keep as memory", "↩ Undo memory …") are
kept here too, as an entry of their own: no command, no text, only the
actions and `answer`, the time the session stored that answer (the turn's
stored row keeps no actions); the history puts them back under that answer.

Storage: one JSON object a line in `tenants/<tid>/web/commands/<h>.jsonl`
(`h`: a hash of the chat id; beside the tenant's `global/` tree, so never in
a saved tool's workspace; an export holds them as `web-commands/`; gone with
`roost forget`), mode 0600, rewritten whole (a temporary file renamed over
it) at each add: the newest `KEEP` commands of the chat, less those of
conversations that no longer exist (`drop` removes a deleted conversation's
at once). An add or a drop reads, changes and writes the file holding an
`flock` on the tenant's `commands/.lock`, so two instances sharing the home
(or a second process) never lose each other's command; in this process one
add of a tenant runs at a time (`KeyedLocks`: nothing kept per chat once the
add is done, whatever chat ids the client makes up). A line that does not
read as an entry is skipped, so a file another version wrote still loads. The
file is read and written a line at a time, split on "\n" only (a text may
hold U+2028, U+2029 or U+0085, which JSON leaves raw); no string the size of
the file is made (growing ones left the process's memory fragmented: hundreds
of MiB).

Bounded, since the chat ids are the client's to pick and commands cost no
tokens: a command is kept cut to `ASKED_MAX` characters, its reply to
`REPLY_MAX` (a cut text ends with "…"); a chat's file holds at most
`CHAT_BYTES` (the oldest commands dropped first); a tenant keeps at most
`CHATS` chat files (the least recently written one is removed). So one
tenant's log is at most `CHATS` × `CHAT_BYTES` on disk, and a history read
parses at most `CHAT_BYTES`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bridge.core.locks import KeyedLocks, file_lock
from bridge.types.session_key import SessionKey

KEEP = 300  # commands per chat
ASKED_MAX = 4_000  # characters of the person's command kept
REPLY_MAX = 8_000  # characters of a reply kept
CHAT_BYTES = 1_000_000  # bytes of one chat's file
CHATS = 16  # chat files of one tenant
CUT = "…"
LOCK = ".lock"  # in a tenant's commands folder: held by the add writing it


def clipped(text: str, most: int) -> str:
    """`text`, or its first `most` - 1 characters and "…" when it is longer (pure)."""
    return text if len(text) <= most else text[: most - 1] + CUT


@dataclass(frozen=True, slots=True)
class Sent:
    """One command the page sent and the reply it got (both masked)."""

    conversation: int
    at: float  # seconds since the epoch
    asked: str
    reply: str
    actions: tuple[dict[str, str], ...] = ()
    settled: bool = field(default=False, compare=False)  # an action's command sent since
    # the offers under a model answer stored at this time (`asked`, `reply` empty)
    answer: float | None = None

    def line(self) -> str:
        body: dict[str, Any] = {"conversation": self.conversation, "at": self.at}
        if self.answer is None:
            body |= {"asked": self.asked, "reply": self.reply}
        else:  # no text of its own: an older roost skips the line
            body["answer"] = self.answer
        if self.actions:
            body["actions"] = list(self.actions)
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def read_line(line: str) -> Sent | None:
    """An entry from a stored line (None when it is not one)."""
    try:
        raw = json.loads(line)
    except ValueError:
        return None
    if not isinstance(raw, dict):
        return None
    conversation, at = raw.get("conversation"), raw.get("at")
    asked, reply, answer = raw.get("asked"), raw.get("reply"), raw.get("answer")
    if not (isinstance(conversation, int) and isinstance(at, int | float)):
        return None
    offers = isinstance(answer, int | float) and not isinstance(answer, bool)
    if offers:
        asked, reply = "", ""
    if not (isinstance(asked, str) and isinstance(reply, str)):
        return None
    actions = raw.get("actions")
    kept = tuple(
        {"label": a["label"], "command": a["command"]}
        for a in (actions if isinstance(actions, list) else [])
        if isinstance(a, dict) and isinstance(a.get("label"), str)
        if isinstance(a.get("command"), str)
    )
    if offers and not kept:
        return None
    under = float(answer) if isinstance(answer, int | float) and offers else None
    return Sent(conversation, float(at), asked, reply, kept, answer=under)


def settled(entries: list[Sent]) -> list[Sent]:
    """The entries, each with `settled` set when one of its actions' commands was sent
    after it (pure)."""
    out: list[Sent] = []
    later: set[str] = set()
    for e in reversed(entries):
        taken = any(a["command"].strip() in later for a in e.actions)
        out.append(replace(e, settled=taken))
        if e.answer is None:
            later.add(e.asked.strip())
    return out[::-1]


class CommandLog:
    """The commands of a tenant's web chats, a file per chat in `folder_of(tenant)`."""

    def __init__(self, folder_of: Callable[[str], Path], keep: int = KEEP) -> None:
        self._folder_of = folder_of  # tenants/<tid>/web/commands (`TenantDirs.web_commands`)
        self._keep = keep
        self.adding: KeyedLocks[Path] = KeyedLocks()  # a tenant's folder: one add at a time

    def path(self, key: SessionKey) -> Path:
        name = hashlib.sha256(key.chat.encode()).hexdigest()[:32]
        return self._folder_of(key.tenant) / f"{name}.jsonl"

    def _read(self, path: Path) -> list[Sent]:
        try:
            stored = path.open("rb")  # a line at a time: no string the size of the file
        except FileNotFoundError:
            return []
        with stored:  # a binary file's lines end at b"\n" only
            read = (read_line(raw.decode(errors="replace")) for raw in stored)
            return [e for e in read if e is not None]

    async def entries(self, key: SessionKey) -> list[Sent]:
        """The chat's commands, oldest first, `settled` marked."""
        return settled(await asyncio.to_thread(self._read, self.path(key)))

    async def add(self, key: SessionKey, sent: Sent, conversations: Iterable[int]) -> None:
        """Keep `sent`; drop what belongs to none of `conversations` (the chat's ones
        that exist) and the oldest past `KEEP`."""
        path = self.path(key)
        cut = replace(
            sent, asked=clipped(sent.asked, ASKED_MAX), reply=clipped(sent.reply, REPLY_MAX)
        )
        alive = set(conversations) | {sent.conversation}
        async with self.adding.hold(path.parent):
            await asyncio.to_thread(self._write, path, cut, alive)

    async def drop(self, key: SessionKey, conversation: int) -> None:
        """Forget the chat's commands of `conversation` (deleted by its person)."""
        path = self.path(key)
        async with self.adding.hold(path.parent):
            await asyncio.to_thread(self._drop, path, conversation)

    def _write(self, path: Path, sent: Sent, alive: set[int]) -> None:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with file_lock(path.parent / LOCK):  # another instance's add waits, then reads ours
            kept = [e for e in self._read(path) if e.conversation in alive]
            self._rewrite(path, [*kept, sent])

    def _drop(self, path: Path, conversation: int) -> None:
        if not path.parent.is_dir():
            return
        with file_lock(path.parent / LOCK):
            stored = self._read(path)
            kept = [e for e in stored if e.conversation != conversation]
            if len(kept) == len(stored):
                return
            if kept:
                self._rewrite(path, kept)
            else:
                path.unlink(missing_ok=True)

    def _rewrite(self, path: Path, kept: list[Sent]) -> None:
        lines = [(e.line() + "\n").encode() for e in kept[-self._keep :]]
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # instances share the home
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.writelines(within(lines, CHAT_BYTES))
            out.flush()
            os.fsync(fd)
        os.replace(tmp, path)
        _prune(path.parent, CHATS, path)


def within(lines: list[bytes], most: int) -> list[bytes]:
    """The newest of `lines` (the last one always) of `most` bytes in all at most (pure)."""
    out: list[bytes] = []
    size = 0
    for line in reversed(lines):
        size += len(line)
        if out and size > most:
            break
        out.append(line)
    return out[::-1]


def _prune(folder: Path, most: int, written: Path) -> None:
    """Remove the least recently written chat files past `most` (never `written`)."""
    found: list[tuple[int, Path]] = []
    for p in folder.glob("*.jsonl"):
        try:
            found.append((p.stat().st_mtime_ns, p))
        except FileNotFoundError:
            continue
    found.sort(key=lambda f: (f[1] == written, f[0]), reverse=True)  # `written` first
    for _, old in found[most:]:
        old.unlink(missing_ok=True)
