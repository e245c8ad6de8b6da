"""/skills and /skill: the tenant's skills with grades, proposals, save, rm, undo.

`/skill` (or `/skills`) lists the skills with their grades and this chat's
pending proposals; `/skill show <name>` shows one; `/skill save <name>` keeps
a proposal the model made in this chat (the person's consent: nothing is
written before it); `/skill rm <name>` removes a skill; `/skill undo`
reverts the last save or removal. Replies name skills and tenant-relative
paths only, never the server's file system.
"""

from __future__ import annotations

from collections.abc import Iterable

from bridge.core.commands import Command, CommandContext, Refused, UsageError
from bridge.core.filecache import FileCache
from bridge.skills.files import read_skills
from bridge.skills.forge import SkillForge
from bridge.skills.grades import SkillGrades
from bridge.skills.proposals import TTL_S, ChatKey, ProposalRefused
from bridge.skills.tool import grade_line

USAGE = "/skill [show <name> | save <name> | rm <name> | undo]"


def _key(ctx: CommandContext) -> ChatKey:
    return (ctx.tenant, ctx.inbound.channel, ctx.inbound.chat)


class SkillCommands:
    def __init__(self, grades: SkillGrades, cache: FileCache, forge: SkillForge) -> None:
        self._grades, self._cache, self._forge = grades, cache, forge

    def commands(self) -> Iterable[Command]:
        return (
            Command("skills", "/skills", "your skills with grades and signal counts", self.list),
            Command(
                "skill",
                USAGE,
                "skills: list, show one, keep a proposal, remove one, undo",
                self.skill,
            ),
        )

    async def skill(self, ctx: CommandContext, args: str) -> str:
        words = args.split()
        if not words:
            return await self.list(ctx, "")
        verb, rest = words[0].lower(), words[1:]
        if verb == "undo" and not rest:
            return await self._undo(ctx)
        if len(rest) != 1:
            raise UsageError()
        if verb == "show":
            return await self._show(ctx, rest[0])
        if verb == "save":
            return await self._save(ctx, rest[0])
        if verb in ("rm", "remove", "delete"):
            return await self._remove(ctx, rest[0])
        raise UsageError()

    def _proposals(self, ctx: CommandContext) -> list[str]:
        pending = self._forge.book.pending(_key(ctx), ctx.now)
        if not pending:
            return []
        lines = ["Proposed in this chat, not saved (nothing is written before /skill save):"]
        for p in pending:
            hours = max(1, int((TTL_S - (ctx.now - p.at)) // 3600))
            lines.append(
                f"- {p.name}: {grade_line(p)}; /skill save {p.name} (expires in {hours} h)"
            )
        return lines

    async def list(self, ctx: CommandContext, args: str) -> str:
        skills = read_skills(ctx.dirs, self._cache)
        proposals = self._proposals(ctx)
        if not skills:
            empty = (
                "No skills yet. A skill is a markdown file skills/<name>.md in your roost "
                "folder (the operator can place it there, or the assistant can propose one "
                "for you to keep), with front matter (name, description, when) and the "
                "procedure as its body."
            )
            return "\n".join((empty, *proposals))
        lines = ["Skills (grade > 0 are offered to the model):"]
        for skill in skills:
            g = await self._grades.get(ctx.tenant, skill.name)
            c = g.counts
            state = "offered" if g.grade > 0 else "not offered"
            lines.append(
                f"- {skill.name}: grade {g.value:+.1f} ({state}); "
                f"👍 {c['approval']} 👎 {c['rejection']} ↻ {c['rephrase']} · {c['neutral']} "
                f"used {c['auto']}× — {skill.description}"
            )
        return "\n".join((*lines, *proposals))

    async def _show(self, ctx: CommandContext, wanted: str) -> str:
        skill = next((s for s in read_skills(ctx.dirs, self._cache) if s.name == wanted), None)
        if skill is None:
            raise Refused(f"There is no skill named {wanted!r}; /skills lists them.")
        g = await self._grades.get(ctx.tenant, skill.name)
        c = g.counts
        return "\n".join(
            (
                f"{skill.name} — {skill.description}",
                f"When: {skill.when or '(not said)'}",
                f"Grade: {g.value:+.1f}; approvals {c['approval']}, rejections {c['rejection']}, "
                f"rephrases {c['rephrase']}, neutral {c['neutral']}, used {c['auto']}×",
                "",
                skill.body or "(empty procedure)",
            )
        )

    async def _save(self, ctx: CommandContext, name: str) -> str:
        key = _key(ctx)
        proposal = self._forge.book.get(key, name, ctx.now)
        if proposal is None:
            names = ", ".join(p.name for p in self._forge.book.pending(key, ctx.now)) or "none"
            raise Refused(
                f"There is no skill proposal {name!r} in this chat (proposed here: {names}). "
                "Proposals expire after 24 h."
            )
        try:
            saved = await self._forge.save(ctx.dirs, proposal, ctx.now)
        except ProposalRefused as exc:
            self._forge.book.drop(key, name)
            return str(exc)
        self._forge.book.drop(key, name)
        if saved.created:
            grade = "a new skill, at the initial grade"
        elif saved.grade_kept:
            grade = f"a small edit ({saved.similarity_pct}% similar): grade kept"
        else:
            grade = f"a rewrite ({saved.similarity_pct}% similar): grade starts fresh"
        g = await self._grades.get(ctx.tenant, name)
        return (
            f"Saved skill {name} ({grade}, now {g.value:+.1f}) as skills/{name}.md. "
            "Offered from your next message on; /skill undo reverts it."
        )

    async def _remove(self, ctx: CommandContext, name: str) -> str:
        if not await self._forge.remove(ctx.dirs, name, ctx.now):
            raise Refused(f"There is no skill named {name!r}; /skills lists them.")
        return f"Removed skill {name}. /skill undo brings it back."

    async def _undo(self, ctx: CommandContext) -> str:
        change = await self._forge.undo(ctx.dirs)
        if change is None:
            return "Nothing to undo."
        if change.op == "rm":
            return f"Undid removing {change.name}: it is back, with its grade."
        if change.before is None:
            return f"Undid saving {change.name}: the new skill is gone."
        g = await self._grades.get(ctx.tenant, change.name)
        return f"Undid saving {change.name}: the previous version is back (grade {g.value:+.1f})."
