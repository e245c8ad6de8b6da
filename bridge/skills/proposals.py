"""Skill proposals (skill-forge): what the model proposed, per chat, until the person saves it.

A proposal is a whole skill file (name, description, body; an edit keeps the
file's `when`) plus the hash of the file it was proposed against, so a save
never overwrites a change made after the person saw the diff. Proposals live
in memory per (tenant, channel, chat), like tool drafts: at most
`MAX_PER_CHAT` names per chat (proposing a name again replaces it), gone after
`TTL_S`, gone at restart. The decisions here are pure functions: checking the
fields, rendering the file, the diff the person sees, and whether an edit is
small enough to keep the skill's grade (`keeps_grade`).
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections import OrderedDict
from dataclasses import dataclass

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")  # as skills/<name>.md is read
MAX_DESCRIPTION = 200
MAX_BODY = 4000
MAX_PER_CHAT = 5
MAX_CHATS = 1024  # chats with pending proposals, kept per process (the oldest go first)
TTL_S = 24 * 3600
SMALL_EDIT = 0.8  # difflib ratio of the bodies from which an edit keeps the grade

ChatKey = tuple[str, str, str]  # tenant, channel, chat


class ProposalRefused(ValueError):
    """The proposal does not fit; the message says what to change."""


@dataclass(frozen=True, slots=True)
class Proposal:
    name: str
    description: str
    body: str
    text: str  # the whole file as it would be written
    base: str | None  # the file it was proposed against (None: a new skill)
    at: float  # seconds since the epoch

    @property
    def created(self) -> bool:
        return self.base is None

    @property
    def hash(self) -> str:
        return content_hash(self.text)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def check(name: str, description: str, body: str) -> tuple[str, str]:
    """The description and body to store (stripped); ProposalRefused when a field is off."""
    if not NAME.fullmatch(name):
        raise ProposalRefused(
            "the name must be 1-64 characters of a-z, 0-9, '_' or '-', starting with a letter "
            "or digit (it becomes skills/<name>.md)"
        )
    description, body = description.strip(), body.strip()
    if not description or "\n" in description or len(description) > MAX_DESCRIPTION:
        raise ProposalRefused(f"the description must be one line of 1-{MAX_DESCRIPTION} characters")
    if not body or len(body) > MAX_BODY:
        raise ProposalRefused(f"the body must be 1-{MAX_BODY:,} characters")
    if body.startswith("---"):
        raise ProposalRefused("the body must not start with '---' (front matter is made for you)")
    return description, body


def render(name: str, description: str, when: str, body: str) -> str:
    """The skill file: front matter (name, description, when if any), then the body."""
    head = [f"name: {name}", f"description: {description}"]
    if when:
        head.append(f"when: {when}")
    return "---\n" + "\n".join(head) + "\n---\n" + body + "\n"


def similarity(old_body: str, new_body: str) -> float:
    """difflib's ratio of the two bodies, line by line then by characters (0..1)."""
    return difflib.SequenceMatcher(None, old_body, new_body, autojunk=False).ratio()


def keeps_grade(old_body: str, new_body: str) -> bool:
    """A small edit (ratio >= SMALL_EDIT) keeps the grade; a rewrite starts fresh."""
    return similarity(old_body, new_body) >= SMALL_EDIT


def _fence(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def diff(name: str, old: str | None, new: str) -> str:
    """What the person sees: a unified diff of the file, or the whole new file."""
    if old is None:
        fence = _fence(new)
        return f"{fence}markdown\n{new.rstrip()}\n{fence}"
    lines = difflib.unified_diff(
        old.splitlines(),
        new.splitlines(),
        f"skills/{name}.md (now)",
        f"skills/{name}.md (proposed)",
        lineterm="",
    )
    text = "\n".join(lines)
    fence = _fence(text)
    return f"{fence}diff\n{text}\n{fence}"


class ProposalBook:
    """Pending proposals per chat: bounded, expiring, never shared between chats or tenants."""

    def __init__(self) -> None:
        self._chats: OrderedDict[ChatKey, dict[str, Proposal]] = OrderedDict()

    def put(self, key: ChatKey, proposal: Proposal) -> None:
        pending = self._fresh(key, proposal.at)
        if proposal.name not in pending and len(pending) >= MAX_PER_CHAT:
            names = ", ".join(sorted(pending))
            raise ProposalRefused(
                f"this chat already has {MAX_PER_CHAT} skill proposals waiting ({names}); "
                "ask the person to /skill save or let them expire before proposing another"
            )
        pending[proposal.name] = proposal
        self._chats[key] = pending
        self._chats.move_to_end(key)
        while len(self._chats) > MAX_CHATS:
            self._chats.popitem(last=False)

    def get(self, key: ChatKey, name: str, now: float) -> Proposal | None:
        return self._fresh(key, now).get(name)

    def pending(self, key: ChatKey, now: float) -> list[Proposal]:
        return sorted(self._fresh(key, now).values(), key=lambda p: p.name)

    def drop(self, key: ChatKey, name: str) -> None:
        pending = self._chats.get(key)
        if pending is not None:
            pending.pop(name, None)
            if not pending:
                del self._chats[key]

    def _fresh(self, key: ChatKey, now: float) -> dict[str, Proposal]:
        pending = self._chats.get(key, {})
        live = {n: p for n, p in pending.items() if now - p.at < TTL_S}
        if key in self._chats and not live:
            del self._chats[key]
        elif live:
            self._chats[key] = live
        return live
