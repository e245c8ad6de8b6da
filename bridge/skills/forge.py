"""skill-forge: the model proposes a skill, the person keeps it; save, remove, undo.

`SkillForge` holds the per-chat proposals and does every change to
`skills/<name>.md` under a per-tenant lock: a proposal is checked and screened
like memory (no secrets or vault values, no invisible characters, no
prompt-injection markers) and only remembered; `save` (the person's
`/skill save`, their consent) writes it, `remove` deletes a skill, `undo`
reverts the last save or removal (journal first, then the change). An edit
whose body is at least `SMALL_EDIT` similar keeps the skill's grade; a
rewrite, or a new skill, starts fresh. Audited as `skill.proposed`,
`skill.saved`, `skill.removed`, `skill.restored` with name and content hash,
never the text.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from bridge.core import frontmatter
from bridge.core.atomic import remove, write_text
from bridge.core.locks import TenantLocks
from bridge.screening.screen import screen
from bridge.skills import journal
from bridge.skills.grades import SkillGrades
from bridge.skills.proposals import (
    ChatKey,
    Proposal,
    ProposalBook,
    ProposalRefused,
    check,
    content_hash,
    keeps_grade,
    render,
    similarity,
)
from bridge.types.audit_sink import AuditSink
from bridge.types.tenant_dirs import TenantDirs

SecretsOf = Callable[[TenantDirs], Mapping[str, str]]
DISK_FULL = "Not saved: the disk is full; nothing was written."


@dataclass(frozen=True, slots=True)
class Saved:
    name: str
    created: bool
    grade_kept: bool
    similarity_pct: int  # 0 for a new skill


def parts(text: str) -> tuple[dict[str, str], str]:
    """A skill file's (unquoted) front matter and its stripped body."""
    found = frontmatter.split(text) or frontmatter.FrontMatter({}, text)
    return found.unquoted(), found.body.strip()


def similarity_pct(old: str, new: str) -> int:
    return int(similarity(parts(old)[1], parts(new)[1]) * 100)


class SkillForge:
    def __init__(
        self,
        grades: SkillGrades,
        audit: AuditSink,
        secrets_of: SecretsOf,
        locks: TenantLocks | None = None,
    ) -> None:
        self.book = ProposalBook()
        self.grades = grades
        self._audit, self._secrets_of = audit, secrets_of
        self._locks = locks or TenantLocks()

    def read(self, dirs: TenantDirs, name: str) -> str | None:
        try:
            return (dirs.skills / f"{name}.md").read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    async def propose(
        self, dirs: TenantDirs, key: ChatKey, name: str, description: str, body: str, now: float
    ) -> Proposal:
        description, body = check(name, description, body)
        reasons = screen("\n".join((name, description, body)), self._secrets_of(dirs).values())
        if reasons:
            raise ProposalRefused("; ".join(reasons))
        old = self.read(dirs, name)
        when = parts(old)[0].get("when", "") if old is not None else ""
        text = render(name, description, when, body)
        if old == text:
            raise ProposalRefused(f"skill {name!r} already reads exactly like this")
        proposal = Proposal(name, description, body, text, old, now)
        self.book.put(key, proposal)
        details: dict[str, object] = {
            "name": name,
            "hash": proposal.hash,
            "created": proposal.created,
            "chars": len(text),
        }
        if old is not None:
            details["similarity_pct"] = similarity_pct(old, text)
        await self._audit.emit("skill.proposed", dirs.tenant, details)
        return proposal

    async def save(self, dirs: TenantDirs, proposal: Proposal, now: float) -> Saved:
        """Write a proposal the person consented to; ProposalRefused if the file moved on."""
        name = proposal.name
        async with self._locks.hold(dirs.root, "skills"):
            old = self.read(dirs, name)
            if old != proposal.base:
                raise ProposalRefused(
                    f"skills/{name}.md changed after this proposal was made; nothing was "
                    "written. Ask for a new proposal to see the difference to what is there now."
                )
            kept = old is not None and keeps_grade(parts(old)[1], proposal.body)
            before = await self.grades.snapshot(dirs.tenant, name)
            try:
                dirs.skills.mkdir(mode=0o700, parents=True, exist_ok=True)
                journal.record(dirs.skills, journal.Change("save", name, now, old, before))
                write_text(dirs.skills / f"{name}.md", proposal.text)
            except OSError as exc:
                if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                    raise ProposalRefused(DISK_FULL) from None
                raise
            if not kept:
                await self.grades.reset(dirs.tenant, name)  # a new or rewritten skill starts fresh
        pct = similarity_pct(old, proposal.text) if old is not None else 0
        await self._audit.emit(
            "skill.saved",
            dirs.tenant,
            {
                "name": name,
                "hash": proposal.hash,
                "created": old is None,
                "grade_kept": kept,
                "similarity_pct": pct,
            },
        )
        return Saved(name, old is None, kept, pct)

    async def remove(self, dirs: TenantDirs, name: str, now: float) -> bool:
        """Delete skills/<name>.md (its grade stays for /skill undo); False: no such skill."""
        async with self._locks.hold(dirs.root, "skills"):
            old = self.read(dirs, name)
            if old is None:
                return False
            before = await self.grades.snapshot(dirs.tenant, name)
            journal.record(dirs.skills, journal.Change("rm", name, now, old, before))
            remove(dirs.skills / f"{name}.md")
        await self._audit.emit(
            "skill.removed", dirs.tenant, {"name": name, "hash": content_hash(old)}
        )
        return True

    async def undo(self, dirs: TenantDirs) -> journal.Change | None:
        """Revert the last save or removal: the file and the grade as they were before."""
        async with self._locks.hold(dirs.root, "skills"):
            change = journal.pop(dirs.skills)
            if change is None:
                return None
            path = dirs.skills / f"{change.name}.md"
            if change.before is None:
                remove(path)
            else:
                write_text(path, change.before)
            await self.grades.restore(dirs.tenant, change.name, change.grade)
        details: dict[str, object] = {"name": change.name, "undid": change.op}
        if change.before is not None:
            details["hash"] = content_hash(change.before)
        await self._audit.emit("skill.restored", dirs.tenant, details)
        return change
