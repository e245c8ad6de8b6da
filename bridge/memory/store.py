"""A tenant's auto-memory: topic files, the MEMORY.md index, the cap and undo.

`MemoryStore` does the file work (synchronous, under an flock of the tenant's
memory directory): save (same name updates, never duplicates), read, delete
and undo. A save about a subject another topic of the same type already
holds under another name supersedes it (`subject_key`: a `user` topic's fact
subject from `memory.facts`, a `feedback` topic's instruction subject from
the injected `instruction_subject`, both read from the index line): the old
topic's file goes, its last version is kept in the new topic's history, the
index shows only the new one (`SaveResult.removed` names such topics).
Archived topics (out of the index) do not count against the memory cap.
Every change is journalled before it is made and the index is regenerated
atomically from the topic files after it. What is stored is
NFKC text without hidden code points (`unicode_clean.clean`). A deletion may be
journalled under a `ref` (its undo button's handle): `undo_ref` reverts that
deletion even after later changes, unless a topic of its name exists again;
any other change only while it is the newest. The async face the
tools and commands use is `bridge.memory.service.Memory`.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bridge.core.atomic import remove, write_text
from bridge.core.filecache import StatKey, sig
from bridge.core.locks import file_lock
from bridge.memory import history, journal, usage
from bridge.memory.consolidate import Plan, index_fingerprint, planned_topics
from bridge.memory.facts import fact_subject
from bridge.memory.files import (
    INDEX_NAME,
    MemoryInputError,
    Topic,
    check_fields,
    index_line,
    iso,
    parse_filename,
    parse_topic,
    render_index,
    render_topic,
    slug,
    usage_chars,
)
from bridge.screening.unicode_clean import clean
from bridge.types.tenant_dirs import TenantDirs


class MemoryRefused(Exception):
    """A save or delete that was not done; the message is for the model or the person."""


class MemoryFull(MemoryRefused):
    """A save refused because the index would pass the cap (consolidation can help)."""


@dataclass(frozen=True, slots=True)
class Provenance:
    by: str  # "model" | "person"
    channel: str
    chat: str
    msg_id: str


@dataclass(frozen=True, slots=True)
class SaveResult:
    topic: Topic
    created: bool
    used: int
    cap: int
    superseded: Topic | None = None  # the version this save replaced (kept in its history)
    removed: tuple[str, ...] = ()  # other topics on the same subject this save removed


class MemoryStore:
    def __init__(
        self,
        memory_cap: int,
        topic_cap: int,
        archive_after_days: int = 90,
        clock: Callable[[], float] = time.time,
        instruction_subject: Callable[[str], str] | None = None,
    ) -> None:
        self.memory_cap = memory_cap
        self.topic_cap = topic_cap
        self._instruction_subject = instruction_subject
        self.archive_after_days = archive_after_days
        self._clock = clock
        # memory dir -> (stat key of its usage file, its data): a turn's `touch` of topics
        # touched within the hour costs one `stat`, not a read and a parse
        self._usage: dict[str, tuple[StatKey, dict[str, dict[str, int]]]] = {}

    # -- reading --------------------------------------------------------------------------
    def topics(self, dirs: TenantDirs) -> list[Topic]:
        mdir = dirs.memory
        try:
            names = sorted(os.listdir(mdir))
        except FileNotFoundError:
            return []
        out = []
        for filename in names:
            if parse_filename(filename) is None:
                continue
            topic = _read_topic(mdir / filename)
            if topic is not None:
                out.append(topic)
        return out

    def find(self, dirs: TenantDirs, name: str) -> Topic | None:
        path = self._path_of(dirs, name)
        return _read_topic(path) if path is not None else None

    def _path_of(self, dirs: TenantDirs, name: str) -> Path | None:
        try:
            wanted = slug(name)
        except MemoryInputError:
            return None
        mdir = dirs.memory
        try:
            names = sorted(os.listdir(mdir))
        except FileNotFoundError:
            return None
        for filename in names:
            parsed = parse_filename(filename)
            if parsed is not None and parsed[1] == wanted:
                return mdir / filename
        return None

    def used(self, dirs: TenantDirs) -> int:
        """Characters of the index as it is now (archived topics are not in it)."""
        topics = self.topics(dirs)
        resting = {t.name for t in self.archived(dirs, topics, self._clock())}
        return usage_chars(t.index_line() for t in topics if t.name not in resting)

    def subject_key(self, type_: str, description: str) -> str:
        """What a topic is about, from its index line ('' when unknown: never superseded)."""
        if type_ == "user":
            return fact_subject(description)
        if type_ == "feedback" and self._instruction_subject is not None:
            return self._instruction_subject(description)
        return ""

    def _same_subject(self, others: list[Topic], type_: str, description: str) -> list[Topic]:
        key = self.subject_key(type_, description)
        if not key:
            return []
        return [
            t for t in others if t.type == type_ and self.subject_key(t.type, t.description) == key
        ]

    # -- writing --------------------------------------------------------------------------
    def save(
        self,
        dirs: TenantDirs,
        name: str,
        type_: str,
        description: str,
        content: str,
        prov: Provenance,
        now: float,
    ) -> SaveResult:
        name, description, content = clean(name), clean(description), clean(content)
        check_fields(name, type_, description, content, self.topic_cap)
        mdir = _mdir(dirs)
        with file_lock(mdir / ".lock"):
            old_path = self._path_of(dirs, name)
            old = _read_topic(old_path) if old_path is not None else None
            others = [t for t in self.topics(dirs) if slug(t.name) != slug(name)]
            stale = self._same_subject(others, type_, description)
            resting = {t.name for t in self.archived(dirs, others, now)}
            others = [t for t in others if t not in stale]
            shown = [t for t in others if t.name not in resting]
            entries = [t.index_line() for t in shown] + [index_line(name, type_, description)]
            used = usage_chars(entries)
            if used > self.memory_cap:
                raise MemoryFull(_full_message(shown, used, self.memory_cap, name))
            meta = {
                "created": old.meta.get("created", iso(now)) if old else iso(now),
                "updated": iso(now),
                "by": prov.by,
                "channel": prov.channel,
                "chat": prov.chat,
                "msg_id": prov.msg_id,
            }
            topic = Topic(name.strip(), type_, description.strip(), content, meta)
            new_path = mdir / topic.filename
            before = {new_path.name: _text(new_path)}
            if old_path is not None and old_path != new_path:
                before[old_path.name] = _text(old_path)
            for t in stale:
                before[t.filename] = _text(mdir / t.filename)
            journal.record(mdir, journal.Change("save", topic.name, type_, now, before))
            replaced = old is not None and (old.description, old.content) != (
                topic.description,
                topic.content,
            )
            if replaced and old is not None:  # the earlier version stays in the history
                history.append(mdir, old, now)
            for t in stale:  # another name, the same subject: its history is the new topic's
                history.append(mdir, t, now, under=topic.name)
            write_text(new_path, render_topic(topic))
            if old_path is not None and old_path != new_path:
                remove(old_path)
            for t in stale:
                if t.filename != new_path.name:
                    remove(mdir / t.filename)
            self._write_index(dirs, now)
            gone = old if replaced else (stale[0] if stale else None)
            return SaveResult(
                topic,
                old is None and not stale,
                used,
                self.memory_cap,
                gone,
                tuple(t.name for t in stale),
            )

    def delete(self, dirs: TenantDirs, name: str, now: float, ref: str = "") -> Topic | None:
        """Delete a topic, journalled (under `ref` when given: `undo_ref` can revert it)."""
        mdir = _mdir(dirs)
        with file_lock(mdir / ".lock"):
            path = self._path_of(dirs, name)
            if path is None:
                return None
            topic = _read_topic(path)
            journal.record(
                mdir,
                journal.Change(
                    "delete",
                    topic.name if topic else name,
                    topic.type if topic else "",
                    now,
                    {path.name: _text(path)},
                    ref,
                ),
            )
            remove(path)
            self._write_index(dirs, now)
            return topic

    def undo(self, dirs: TenantDirs, only: str | None = None) -> journal.Change | None:
        """Revert the newest change; with `only`, just when it is a change of that topic."""
        mdir = _mdir(dirs)
        with file_lock(mdir / ".lock"):
            last = journal.peek(mdir)
            if only is not None and (last is None or last.name != only):
                return None
            change = journal.pop(mdir)
            if change is None:
                return None
            self._restore(dirs, change)
            return change

    def undo_ref(self, dirs: TenantDirs, ref: str) -> journal.Change | None:
        """Revert the change journalled under `ref` (None: no longer in the journal).

        The newest change is reverted as `undo` does. An older one only when it is a
        deletion and no topic of its name exists again (a later change of another
        topic does not touch its file); else `MemoryRefused` says why.
        """
        mdir = _mdir(dirs)
        with file_lock(mdir / ".lock"):
            change = journal.find(mdir, ref)
            if change is None:
                return None
            last = journal.peek(mdir)
            if last is not None and last.ref != ref:
                if change.op != "delete":
                    raise MemoryRefused(
                        f"Not undone: {last.op} {last.name!r} came after it; "
                        "/memory undo reverts the latest, one at a time."
                    )
                taken = self._taken(dirs, change)
                if taken is not None:
                    raise MemoryRefused(
                        f"Not restored: there is a memory {taken!r} again. Remove it first "
                        f"(/memory rm {taken}), then undo this deletion again."
                    )
            journal.drop(mdir, ref)
            self._restore(dirs, change)
            return change

    def _taken(self, dirs: TenantDirs, change: journal.Change) -> str | None:
        """The name of a topic now in the place of one `change` would bring back."""
        wanted = set()
        for filename in change.before:
            parsed = parse_filename(filename)
            if parsed is not None:
                wanted.add(parsed[1])
        for filename in sorted(os.listdir(dirs.memory)):
            parsed = parse_filename(filename)
            if parsed is not None and parsed[1] in wanted:
                topic = _read_topic(dirs.memory / filename)
                return topic.name if topic is not None else parsed[1]
        return None

    def _restore(self, dirs: TenantDirs, change: journal.Change) -> None:
        """Put back the topic files as they were before `change`; the index after."""
        mdir = dirs.memory
        for filename, text in change.before.items():
            if parse_filename(filename) is None:
                continue  # never write outside the topic files
            if text is None:
                remove(mdir / filename)
            else:
                write_text(mdir / filename, text)
        self._write_index(dirs, self._clock())

    def consolidate(
        self, dirs: TenantDirs, plan: Plan, fingerprint: str, prov: Provenance, now: float
    ) -> int:
        """Apply a confirmed plan as one journalled change (one `/memory undo` reverts it).

        Refused when the memory changed since the plan was made (its `fingerprint`)
        or when the result would not fit the cap; returns the index size after.
        """
        mdir = _mdir(dirs)
        with file_lock(mdir / ".lock"):
            topics = self.topics(dirs)
            if index_fingerprint(topics) != fingerprint:
                raise MemoryRefused(
                    "Not changed: the memory changed since this proposal. Ask again: /memory tidy"
                )
            result = planned_topics(topics, plan, _meta(prov, now))
            used = usage_chars(t.index_line() for t in result)
            if used > self.memory_cap:
                raise MemoryRefused("Not changed: the result would still pass the memory cap.")
            gone = {t.filename for t in topics} - {t.filename for t in result}
            written = [t for t in result if t not in topics]
            before = {f: _text(mdir / f) for f in sorted(gone | {t.filename for t in written})}
            merged = sum(len(m.sources) for m in plan.merges)
            label = f"{merged} merged into {len(plan.merges)}, {len(plan.drops)} dropped"
            journal.record(mdir, journal.Change("consolidate", label, "", now, before))
            for topic in written:
                write_text(mdir / topic.filename, render_topic(topic))
            for filename in sorted(gone):
                remove(mdir / filename)
            self._write_index(dirs, now)
            return used

    def rebuild_index(self, dirs: TenantDirs, now: float | None = None) -> None:
        mdir = _mdir(dirs)
        with file_lock(mdir / ".lock"):
            self._write_index(dirs, self._clock() if now is None else now)

    def touch(
        self,
        dirs: TenantDirs,
        names: list[str],
        what: str,
        now: float,
        stat_key: Callable[[str], StatKey] = sig,
    ) -> None:
        """Record a read or an injection; an archived topic used again is back in the index.
        `stat_key` vouches for the usage file as read before (a watched `FileCache`'s
        `stat_key` answers without a `stat` while no event named the file)."""
        if not names:
            return
        where = str(dirs.memory)
        key = stat_key(f"{where}{os.sep}{usage.FILENAME}")
        hit = self._usage.get(where)
        if hit is None or key is None or hit[0] != key:
            hit = (key, usage.load(dirs.memory))  # the key taken first: a write after moves it
            if len(self._usage) >= 1024:
                self._usage.clear()
            self._usage[where] = hit
        if not usage.due(hit[1], names, what, now):
            return
        self._usage.pop(where, None)
        if usage.touch(dirs.memory, names, what, now):
            self.rebuild_index(dirs, now)

    def archived(self, dirs: TenantDirs, topics: list[Topic], now: float) -> list[Topic]:
        """The topics left out of the index at `now` (unused for `archive_after_days`)."""
        used = usage.load(dirs.memory)
        return [t for t in topics if usage.archived(t, used, now, self.archive_after_days)]

    def _write_index(self, dirs: TenantDirs, now: float) -> None:
        topics = self.topics(dirs)
        resting = {t.name for t in self.archived(dirs, topics, now)}
        text = render_index([t for t in topics if t.name not in resting])
        if resting:
            text += f"# {len(resting)} archived topics (unused for a while): /memory list --all\n"
        path = dirs.memory / INDEX_NAME
        if _text(path) != text:
            write_text(path, text)
        else:  # current as of now: a topic saved with its line unchanged is no hand edit
            with contextlib.suppress(FileNotFoundError):  # (`files.index_behind`)
                os.utime(path)


def _mdir(dirs: TenantDirs) -> Path:
    mdir = dirs.memory
    mdir.mkdir(mode=0o700, parents=True, exist_ok=True)
    return mdir


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _read_topic(path: Path) -> Topic | None:
    text = _text(path)
    return parse_topic(text) if text is not None else None


def _meta(prov: Provenance, now: float) -> dict[str, str]:
    return {
        "created": iso(now),
        "updated": iso(now),
        "by": prov.by,
        "channel": prov.channel,
        "chat": prov.chat,
        "msg_id": prov.msg_id,
    }


def _full_message(others: list[Topic], used: int, cap: int, name: str) -> str:
    lines = "\n".join(t.index_line() for t in sorted(others, key=lambda t: (t.type, t.name)))
    return (
        f"Not saved: memory is full. Saving {name!r} would make the index {used:,} characters; "
        f"the cap is {cap:,}. Nothing was written. Consolidate first: merge related entries "
        f"with memory_save under one name, shorten descriptions, or memory_delete stale ones, "
        f"then save again. Current entries:\n{lines or '(none)'}"
    )
