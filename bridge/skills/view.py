"""Prompt block 7's source: the tenant's skills whose grade is above 0.

The grades come from `SkillGrades`' mirror, synchronously (the prompt awaits
`TableChanges.prepare` for the tenant first); grades not read yet count as
the initial grade (a missed `prepare`: the memo's token is None then, so the
view is asked again on the next turn)."""

from __future__ import annotations

from bridge.core.filecache import FileCache
from bridge.prompt.views import SkillRow
from bridge.skills.files import kept_skills
from bridge.skills.grades import INITIAL_GRADE, SkillGrades
from bridge.types.tenant_dirs import TenantDirs


class GradedSkills:
    """Implements the loadout's `SkillsView` from skill files and the grades' mirror."""

    tables = ("skill_grades",)  # what it reads (`bridge.prompt.views.declared`), and files:

    def __init__(self, grades: SkillGrades, cache: FileCache) -> None:
        self._grades, self._cache = grades, cache
        self.files = cache  # every skill file is read through it

    def active(self, dirs: TenantDirs) -> list[SkillRow]:
        skills = kept_skills(dirs, self._cache)
        if not skills:
            return []
        grades = self._grades.cached(dirs.tenant) or {}
        out: list[SkillRow] = []
        for skill in skills:
            grade = grades[skill.name].grade if skill.name in grades else INITIAL_GRADE
            if grade > 0:
                description = skill.description
                if skill.when:
                    description = (
                        f"{description} (when: {skill.when})" if description else skill.when
                    )
                out.append(SkillRow(skill.name, description, grade / 1000))
        return out
