"""Keep a confirmed correction: as a feedback memory or as a steering line, replacing conflicts.

Memory: a `feedback` topic named `correction <subject>` (or after its first
words when no subject is known); an older correction topic that conflicts
(`subjects.conflicts`) is updated in place, so "always answer in German" then
"always answer in English" leaves one topic. Steering: a line under the
"Standing instructions" section of the tenant's `STEERING.md`; a conflicting
line is replaced in place (`steering.with_kept_line`; an `@path` in it is
written as plain text, `steering.kept_form`, so a kept line never includes a
file). Both are screened like
every stored text (no secrets, no invisible characters, no injections), both
are journalled or atomically written, and `correction.kept` /
`correction.replaced` record kind, hashes and the subject key, never the words.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from bridge.core.atomic import write_text
from bridge.core.locks import TenantLocks
from bridge.corrections.detect import Correction, detect
from bridge.corrections.subjects import conflicts, subject_of
from bridge.loadout.steering import kept_form, with_kept_line
from bridge.memory.files import MAX_DESCRIPTION, Topic
from bridge.memory.service import Memory, SecretsOf
from bridge.memory.store import MemoryRefused, Provenance
from bridge.screening.screen import refusal, screen
from bridge.types.audit_sink import AuditSink
from bridge.types.tenant_dirs import TenantDirs

PREFIX = "correction"


def text_hash(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:16]


def reading(text: str) -> tuple[str, int, str]:
    """(subject, polarity, text) of a stored instruction, read as the detector would."""
    found = detect(text)
    if found is not None:
        return found.subject, found.polarity, found.text
    return subject_of(text), 1, " ".join(text.split())


def _replaces(new: Correction, old_text: str) -> bool:
    return conflicts(new.subject, new.polarity, new.text, reading(old_text))


def topic_name(correction: Correction) -> str:
    if correction.subject:
        return f"{PREFIX} {correction.subject}"
    words = [w for w in correction.text.split() if any(c.isalnum() for c in w)][:5]
    return f"{PREFIX} " + " ".join(words)[:48]


@dataclass(frozen=True, slots=True)
class Kept:
    kind: str  # memory | steering
    where: str  # the topic name or "STEERING.md"
    replaced: str | None  # the text it replaced
    text: str  # the words kept, as stored (a steering line with its `@refs` made plain)


class Keeper:
    def __init__(
        self,
        memory: Memory,
        audit: AuditSink,
        secrets_of: SecretsOf,
        locks: TenantLocks | None = None,
    ) -> None:
        self._memory = memory
        self._audit = audit
        self._secrets_of = secrets_of
        self._locks = locks or TenantLocks()

    async def keep(
        self, dirs: TenantDirs, correction: Correction, kind: str, prov: Provenance, now: float
    ) -> Kept:
        """Store it; `MemoryRefused` (screened, or memory full) leaves everything as it was."""
        if kind == "steering":
            kept = await self._steering(dirs, correction)
        else:
            kept = await self._memory_topic(dirs, correction, prov, now)
        details: dict[str, object] = {
            "kind": kind,
            "hash": text_hash(correction.text),
            "subject": correction.subject or "none",
            "replaced": kept.replaced is not None,
        }
        await self._audit.emit("correction.kept", dirs.tenant, details)
        if kept.replaced is not None:
            await self._audit.emit(
                "correction.replaced",
                dirs.tenant,
                {
                    "kind": kind,
                    "old_hash": text_hash(kept.replaced),
                    "hash": text_hash(correction.text),
                    "subject": correction.subject or "none",
                },
            )
        return kept

    async def _memory_topic(
        self, dirs: TenantDirs, correction: Correction, prov: Provenance, now: float
    ) -> Kept:
        old = self._conflicting_topic(dirs, correction)
        name = old.name if old is not None else topic_name(correction)
        one = correction.text
        desc = one if len(one) <= MAX_DESCRIPTION else one[: MAX_DESCRIPTION - 1] + "…"
        content = f"{one}\n\n(A standing instruction the person confirmed with /yes.)"
        await self._memory.save(dirs, name, "feedback", desc, content, prov, now)
        replaced = _first_line(old.content) if old is not None else None
        if replaced is not None and text_hash(replaced) == text_hash(one):
            replaced = None  # the same words kept again: an update, not a replacement
        return Kept("memory", name, replaced, one)

    def _conflicting_topic(self, dirs: TenantDirs, correction: Correction) -> Topic | None:
        for topic in self._memory.store.topics(dirs):
            if topic.type != "feedback" or not topic.name.lower().startswith(PREFIX):
                continue
            if _replaces(correction, _first_line(topic.content)):
                return topic
        return None

    async def _steering(self, dirs: TenantDirs, correction: Correction) -> Kept:
        reasons = screen(correction.text, self._secrets_of(dirs).values())
        if reasons:
            raise MemoryRefused(refusal("this instruction", reasons))
        path = dirs.steering
        async with self._locks.hold(dirs.root, "steering"):
            try:
                text = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                text = ""
            new, replaced = with_kept_line(
                text, correction.text, lambda old: _replaces(correction, old)
            )
            write_text(path, new)
        return Kept("steering", "STEERING.md", replaced, kept_form(correction.text))


def _first_line(content: str) -> str:
    return content.strip().splitlines()[0] if content.strip() else ""
