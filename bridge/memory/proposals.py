"""Memory proposals waiting for the person: facts found in imported conversations.

Nothing imported becomes a memory note by itself. `roost import` collects the
sentences in which the person stated a fact about themselves
(`facts.stated_facts`, no model), and `pick` turns them into at most `CAP`
proposals: the newest statement per subject (a later "I moved to Leipzig"
wins over an earlier "I live in Bonn"), none about a subject an existing
topic or a waiting proposal already covers. They wait in
`memory/.proposals.json` (0600, atomically written, under its own flock: the
import runs beside the daemon) until the person looks at them in a chat
(`/memory proposals`: each shown with every word keeping it stores, never
cut, `Proposal.shown`), keeps one (`/memory keep <id>`: a `user` topic saved
like any `/remember`, journalled, `/memory undo` reverts it) or declines it
(`/memory decline <id|all>`). Like a tidy-up, the chat shows each with a
one-tap action. A declined statement is remembered, as a hash of its subject
and words only (`declined_key`), in `memory/.proposals-declined.json` (the
newest `KEEP_DECLINED`): the same file imported again, or a later import
holding the same statement, does not offer it again; a new statement about
the subject still is. `roost forget` removes it with the tenant's tree.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from pathlib import Path

from bridge.core.atomic import write_text
from bridge.core.locks import file_lock
from bridge.memory.facts import fact_subject
from bridge.memory.files import MAX_DESCRIPTION, Topic

FILENAME = ".proposals.json"
DECLINED = ".proposals-declined.json"
KEEP_DECLINED = 1000  # declined statements remembered (the newest)
CAP = 10  # proposals waiting at once (per tenant)
LETTERS, DIGITS = "abcdefghjkmnpqrstuvwxyz", "23456789"
NAMES = {
    "name": "my name",
    "home": "where I live",
    "work": "my work",
    "birthday": "my birthday",
    "allergy": "my allergies",
    "diet": "my diet",
    "partner": "my partner",
    "children": "my children",
    "pet": "my pet",
    "origin": "where I am from",
}


@dataclass(frozen=True, slots=True)
class Candidate:
    """A sentence an import found: the person stating a fact about themselves."""

    subject: str
    sentence: str
    at_ms: int
    conversation: str


@dataclass(frozen=True, slots=True)
class Proposal:
    id: str
    subject: str
    sentence: str
    at_ms: int
    conversation: str

    @property
    def name(self) -> str:
        return NAMES.get(self.subject, f"my {self.subject}")

    @property
    def description(self) -> str:
        one = " ".join(self.sentence.split())
        return one if len(one) <= MAX_DESCRIPTION else one[: MAX_DESCRIPTION - 3].rstrip() + "..."

    @property
    def day(self) -> str:
        return time.strftime("%Y-%m-%d", time.gmtime(self.at_ms / 1000))

    @property
    def content(self) -> str:
        return f"{self.sentence}\n(said {self.day}, imported conversation {self.conversation})"

    @property
    def shown(self) -> str:
        """What `/memory proposals` shows of it: every word `/memory keep` stores (the
        whole sentence, of which `description` is the start, then the day and the
        conversation it came from), never a cut."""
        one = " ".join(self.sentence.split())
        where = " ".join(self.conversation.split())
        return f"{self.name}: {one} (said {self.day}, imported conversation {where})"


def topic_subject(topic: Topic) -> str:
    """The fact subject of a stored topic (its description first, then its content)."""
    return fact_subject(topic.description) or fact_subject(topic.content[:400])


def declined_key(subject: str, sentence: str) -> str:
    """What is remembered of a declined statement: a hash of its subject and its words
    (case and spacing ignored), never the text."""
    words = " ".join(sentence.casefold().split())
    return hashlib.sha256(f"{subject}\0{words}".encode()).hexdigest()[:32]


def newest(candidates: Iterable[Candidate], keep: dict[str, Candidate]) -> None:
    """Fold `candidates` into `keep`: the newest statement per subject (bounded by subjects)."""
    for c in candidates:
        old = keep.get(c.subject)
        if old is None or c.at_ms >= old.at_ms:
            keep[c.subject] = c


def pick(
    found: Iterable[Candidate],
    topics: Sequence[Topic],
    waiting: Sequence[Proposal],
    cap: int = CAP,
    declined: frozenset[str] = frozenset(),
) -> list[Proposal]:
    """The new proposals: newest per subject, none an existing topic or proposal covers,
    none the person declined before (`declined`: `declined_key`s). An older statement
    does not stand in for a declined newer one."""
    covered = {topic_subject(t) for t in topics} | {p.subject for p in waiting}
    by_subject: dict[str, Candidate] = {}
    newest(found, by_subject)
    room = max(0, cap - len(waiting))
    taken = {p.id for p in waiting}
    out: list[Proposal] = []
    for c in sorted(by_subject.values(), key=lambda c: (-c.at_ms, c.subject)):
        if c.subject in covered or len(out) >= room:
            continue
        if declined_key(c.subject, c.sentence) in declined:
            continue
        pid = _new_id(taken)
        taken.add(pid)
        out.append(Proposal(pid, c.subject, c.sentence, c.at_ms, c.conversation))
    return out


def _new_id(taken: set[str]) -> str:
    while True:
        pid = "".join(secrets.choice(c) for c in (LETTERS, DIGITS, LETTERS, DIGITS))
        if pid not in taken:
            return pid


class ProposalBox:
    """The waiting proposals of one tenant's memory directory."""

    def __init__(self, memory_dir: Path) -> None:
        self._dir = memory_dir

    def _path(self) -> Path:
        return self._dir / FILENAME

    def waiting(self) -> list[Proposal]:
        try:
            raw = json.loads(self._path().read_text("utf-8"))
        except (FileNotFoundError, ValueError):
            return []
        out = []
        for r in raw if isinstance(raw, list) else []:
            try:
                out.append(Proposal(**r))
            except TypeError:
                continue
        return out

    def offer(self, found: Iterable[Candidate], topics: Sequence[Topic]) -> list[Proposal]:
        """Add proposals made from `found` (see `pick`); returns the ones added."""
        with self._locked():
            waiting = self.waiting()
            added = pick(found, topics, waiting, declined=frozenset(self.declined()))
            if added:
                self._write([*waiting, *added])
            return added

    def take(self, pid: str) -> Proposal | None:
        """The proposal with this id, removed (kept or declined once)."""
        with self._locked():
            waiting = self.waiting()
            hit = next((p for p in waiting if p.id == pid.lower()), None)
            if hit is not None:
                self._write([p for p in waiting if p.id != hit.id])
            return hit

    def put_back(self, proposal: Proposal) -> None:
        """Return a proposal taken but not kept (the save was refused for a full memory)."""
        with self._locked():
            waiting = self.waiting()
            if all(p.id != proposal.id for p in waiting):
                self._write([*waiting, proposal])

    def decline(self, pid: str) -> Proposal | None:
        """Take the proposal with this id and remember it as declined."""
        with self._locked():
            waiting = self.waiting()
            hit = next((p for p in waiting if p.id == pid.lower()), None)
            if hit is not None:
                self._remember_declined([hit])
                self._write([p for p in waiting if p.id != hit.id])
            return hit

    def decline_all(self) -> int:
        """Decline every waiting proposal (remembered); how many there were."""
        with self._locked():
            waiting = self.waiting()
            if waiting:
                self._remember_declined(waiting)
                self._write([])
            return len(waiting)

    def clear(self) -> int:
        with self._locked():
            n = len(self.waiting())
            if n:
                self._write([])
            return n

    def declined(self) -> list[str]:
        """The `declined_key`s of the statements declined so far, oldest first."""
        try:
            raw = json.loads((self._dir / DECLINED).read_text("utf-8"))
        except (FileNotFoundError, ValueError):
            return []
        return [k for k in raw if isinstance(k, str)] if isinstance(raw, list) else []

    def _remember_declined(self, proposals: list[Proposal]) -> None:
        keys = [declined_key(p.subject, p.sentence) for p in proposals]
        kept = list(dict.fromkeys([*self.declined(), *keys]))[-KEEP_DECLINED:]
        write_text(self._dir / DECLINED, json.dumps(kept, indent=0) + "\n")

    def _write(self, proposals: list[Proposal]) -> None:
        text = json.dumps([asdict(p) for p in proposals], ensure_ascii=False, indent=1)
        write_text(self._path(), text + "\n")

    def _locked(self) -> AbstractContextManager[None]:
        self._dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        return file_lock(self._dir / ".proposals.lock")
