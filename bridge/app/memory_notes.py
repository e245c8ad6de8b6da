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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bridge.core.config_sections import MemorySettings
from bridge.memory.files import Topic
from bridge.memory.store import MemoryStore
from bridge.recall.notes import Scored, choose, score_notes
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


class MemoryNotes:
    def __init__(
        self,
        store: MemoryStore,
        settings: MemorySettings,
        now_note: Callable[[TurnContext], str] | None = None,
    ) -> None:
        self._store = store
        self._chars = settings.inject_chars
        self._floor = settings.inject_floor
        self._now_note = now_note

    def explain(self, dirs: TenantDirs, message: str) -> Explained:
        if self._chars <= 0:
            return Explained([], [], "")
        topics = self._store.topics(dirs)
        scored = score_notes(message, [(t.name, _text(t)) for t in topics])
        chosen = choose(scored, self._floor, self._chars)
        return Explained(scored, chosen, render(chosen))

    def note(self, turn: TurnContext) -> str:
        """The Now note and the matching topics (their injection recorded)."""
        now = self._now_note(turn) if self._now_note is not None else ""
        found = self.explain(turn.dirs, turn.inbound.text)
        if found.chosen:
            names = [s.name for s in found.chosen]
            self._store.touch(turn.dirs, names, "injected", turn.now())
        return "\n\n".join(p for p in (now, found.note) if p)
