"""The memory topics that fit the newest message, put just before it (with the Now note).

Besides the always-loaded index (block 3), each turn scores every topic's
name, description and body against the person's newest message
(`bridge.recall.notes`: the idf-weighted share of the message's words the
topic holds), keeps those at or above `[memory] inject_floor`, best first,
within `[memory] inject_chars`, and puts their bodies into the same short
user message as the Now note, just before the newest message: the system
prompt and the stored history stay byte-stable, and nothing of it is stored.
Each injected topic's `injected` time is recorded (an archived topic used
again comes back into the index). `explain` is what `roost prompt --message`
prints: every topic's score and whether it would go in.

The topics are read through a stat-checked cache (`FileCache`: a file is
opened again only when its stat changed) and each version of a topic file is
parsed and split into its look-up terms once (`_TopicTerms`), so a turn with
an unchanged memory costs one `stat` per topic and the scoring of the
message, not a read, a parse and a tokenisation of every topic. The list of
topics and an index of their terms (term -> topics) are kept while the watch
vouches that no topic file changed (`FileCache.still`), so a turn with an
unchanged memory costs one look at the watch and the scoring of the
message's words through the index (`score_held`: the same scores as
`explain`'s, for the topics that score above 0). A topic saved is parsed and
split again alone, and the index of its terms is the old one put right for that
topic alone (`NoteIndex.changed`: its old terms out, its new terms in). The
usage record of the injected topics is vouched for by the same watch.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from bridge.core.config_sections import MemorySettings
from bridge.core.filecache import FileCache, Reads
from bridge.memory.files import Topic, parse_filename, parse_topic
from bridge.memory.store import MemoryStore
from bridge.recall.notes import NoteIndex, Scored, choose, note_terms, score_held, score_notes
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import TurnContext


@dataclass(frozen=True, slots=True)
class Explained:
    scored: list[Scored]
    chosen: list[Scored]
    note: str


def _text(topic: Topic) -> str:
    """The description and the body (the body alone when it begins with the description)."""
    if topic.content.startswith(topic.description.rstrip("…. ")):
        return topic.content
    return f"{topic.description}\n{topic.content}"


def render(chosen: list[Scored]) -> str:
    if not chosen:
        return ""
    parts = ["[From memory, the notes that match this message:"]
    for s in chosen:
        parts.append(f"## {s.name} (match {s.score:.2f})\n{s.text.strip()}")
    return "\n".join(parts) + "]"


Parse = Callable[[str, str], "tuple[Topic, str, frozenset[str]] | None"]


class _Kept:
    """One memory directory's topics as last worked out: what vouches for them, each
    one's path, (name, note text) and terms, and the index of the terms."""

    __slots__ = ("index", "notes", "paths", "reads", "where")

    def __init__(
        self,
        reads: Reads,
        paths: list[str],
        notes: list[tuple[str, str]],
        index: NoteIndex,
        where: dict[str, int] | None = None,
    ) -> None:
        self.reads, self.paths, self.notes, self.index = reads, paths, notes, index
        self.where = where if where is not None else {p: i for i, p in enumerate(paths)}

    def again(self, texts: dict[str, str | None], parse: Parse) -> _Kept | None:
        """These topics with the files of `texts` as they read now (their `reads`
        already moved on); None when one of them is no longer a topic (or was not one
        before): then everything is read again. The index of their terms is this one's
        put right for the changed topics (`NoteIndex.changed`)."""
        notes, terms = list(self.notes), list(self.index.held)
        which = []
        for path, text in texts.items():
            i = self.where.get(path)
            parsed = parse(path, text) if text is not None else None
            if i is None or parsed is None:
                return None
            notes[i] = (parsed[0].name, parsed[1])
            terms[i] = parsed[2]
            which.append(i)
        return _Kept(self.reads, self.paths, notes, self.index.changed(terms, which), self.where)


class _TopicTerms:
    """A tenant's topics as `MemoryStore.topics` lists them, with each one's note text
    and look-up terms, worked out once per version of its file."""

    def __init__(self, files: FileCache) -> None:
        self._files = files
        # path -> (the cached text object, its topic or None, its note text, its terms)
        self._parsed: dict[str, tuple[str, Topic | None, str, frozenset[str]]] = {}
        # memory dir -> (the cached listing object, the paths of its topic files)
        self._paths: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        # memory dir -> its topics as last worked out
        self._kept: dict[str, _Kept] = {}

    def _topic_paths(self, dirs: TenantDirs) -> tuple[str, ...]:
        mdir = str(dirs.memory)
        names = self._files.listdir(mdir)  # sorted, as the store lists them
        hit = self._paths.get(mdir)
        if hit is None or (hit[0] is not names and hit[0] != names):
            paths = tuple(os.path.join(mdir, n) for n in names if parse_filename(n) is not None)
            hit = self._paths[mdir] = (names, paths)
        return hit[1]

    def indexed(self, dirs: TenantDirs) -> tuple[list[tuple[str, str]], NoteIndex]:
        """The (name, note text) of `of(dirs)` and the index of its terms, kept while no
        topic file changed (one look at the watch: `FileCache.recording` and `still`).
        When only some topics' texts changed (a topic saved), only those are parsed and
        split again (`FileCache.changed_texts`); a topic added or removed lists again."""
        key = str(dirs.memory)
        hit = self._kept.get(key)
        if hit is not None:
            texts = self._files.changed_texts(hit.reads)
            if texts == {}:
                return hit.notes, hit.index
            if texts is not None:
                again = hit.again(texts, self._parse)
                if again is not None:
                    self._kept[key] = again
                    return again.notes, again.index
        # a read of every topic looks at the watch's queue once (`FileCache.batch`); the
        # kept topics above, one look in all, need no batch around them
        with self._files.batch(), self._files.recording() as reads:
            paths, topics = self._read_all(dirs)
        notes = [(t.name, body) for t, body, _ in topics]
        kept = _Kept(reads, paths, notes, NoteIndex([terms for _, _, terms in topics]))
        if len(self._kept) >= 1024:
            self._kept.clear()
        self._kept[key] = kept
        return kept.notes, kept.index

    def of(self, dirs: TenantDirs) -> list[tuple[Topic, str, frozenset[str]]]:
        return self._read_all(dirs)[1]

    def _read_all(
        self, dirs: TenantDirs
    ) -> tuple[list[str], list[tuple[Topic, str, frozenset[str]]]]:
        """The topics (and the path of each) in the store's order."""
        paths, out = [], []
        for path in self._topic_paths(dirs):
            text = self._files.read(path)
            if text is None:
                continue
            parsed = self._parse(path, text)
            if parsed is not None:
                paths.append(path)
                out.append(parsed)
        return paths, out

    def _parse(self, path: str, text: str) -> tuple[Topic, str, frozenset[str]] | None:
        """The topic in `text`, its note text and its terms (None: not a topic), worked
        out once per version of the file."""
        hit = self._parsed.get(path)
        if hit is None or hit[0] is not text:
            topic = parse_topic(text)
            body = _text(topic) if topic is not None else ""
            terms = note_terms(topic.name, body) if topic is not None else frozenset()
            hit = (text, topic, body, terms)
            if len(self._parsed) >= 8192:
                self._parsed.clear()
            self._parsed[path] = hit
        return None if hit[1] is None else (hit[1], hit[2], hit[3])


class MemoryNotes:
    def __init__(
        self,
        store: MemoryStore,
        settings: MemorySettings,
        now_note: Callable[[TurnContext], str] | None = None,
        files: FileCache | None = None,
    ) -> None:
        self._store = store
        self._chars = settings.inject_chars
        self._floor = settings.inject_floor
        self._now_note = now_note
        self._files = files or FileCache()
        self._topics = _TopicTerms(self._files)

    def explain(self, dirs: TenantDirs, message: str) -> Explained:
        if self._chars <= 0:
            return Explained([], [], "")
        topics = self._topics.of(dirs)
        notes = [(t.name, body) for t, body, _ in topics]
        scored = score_notes(message, notes, [terms for _, _, terms in topics])
        chosen = choose(scored, self._floor, self._chars)
        return Explained(scored, chosen, render(chosen))

    def note(self, turn: TurnContext) -> str:
        """The Now note and the matching topics (their injection recorded)."""
        now = self._now_note(turn) if self._now_note is not None else ""
        if self._chars <= 0:
            return now
        # (no `FileCache.batch` around these three looks at the watch: entering one costs
        # more than the two looks it saves, measured)
        notes, index = self._topics.indexed(turn.dirs)
        # as `explain` scores them, only those that may be chosen
        scored = score_held(turn.inbound.text, notes, index, self._floor)
        chosen = choose(scored, self._floor, self._chars) if scored else []
        if chosen:
            names = [s.name for s in chosen]
            # the usage file vouched for by the watch, as the topics are: no `stat`
            self._store.touch(turn.dirs, names, "injected", turn.now(), self._files.stat_key)
        return "\n\n".join(p for p in (now, render(chosen)) if p)
