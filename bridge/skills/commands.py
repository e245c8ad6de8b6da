"""/skills and /skill show: what the tenant's skills are and how they are graded.

Replies name skills and tenant-relative paths only, never the server's file system.
"""

from __future__ import annotations

from collections.abc import Iterable

from bridge.core.commands import Command, CommandContext, UsageError
from bridge.core.filecache import FileCache
from bridge.skills.files import read_skills
from bridge.skills.grades import SkillGrades


class SkillCommands:
    def __init__(self, grades: SkillGrades, cache: FileCache) -> None:
        self._grades, self._cache = grades, cache

    def commands(self) -> Iterable[Command]:
        return (
            Command("skills", "/skills", "your skills with grades and signal counts", self.list),
            Command(
                "skill", "/skill show <name>", "one skill: procedure, grade, signals", self.show
            ),
        )

    async def list(self, ctx: CommandContext, args: str) -> str:
        skills = read_skills(ctx.dirs, self._cache)
        if not skills:
            return (
                "No skills yet. A skill is a markdown file skills/<name>.md in your roost "
                "folder (the operator can place it there), with front matter (name, "
                "description, when) and the procedure as its body."
            )
        lines = ["Skills (grade > 0 are offered to the model):"]
        for skill in skills:
            g = self._grades.get(ctx.tenant, skill.name)
            c = g.counts
            state = "offered" if g.grade > 0 else "not offered"
            lines.append(
                f"- {skill.name}: grade {g.value:+.1f} ({state}); "
                f"👍 {c['approval']} 👎 {c['rejection']} ↻ {c['rephrase']} · {c['neutral']} "
                f"used {c['auto']}× — {skill.description}"
            )
        return "\n".join(lines)

    async def show(self, ctx: CommandContext, args: str) -> str:
        parts = args.split()
        if len(parts) != 2 or parts[0] != "show":
            raise UsageError()
        wanted = parts[1]
        skill = next((s for s in read_skills(ctx.dirs, self._cache) if s.name == wanted), None)
        if skill is None:
            raise UsageError(f"There is no skill named {wanted!r}; /skills lists them.")
        g = self._grades.get(ctx.tenant, skill.name)
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
