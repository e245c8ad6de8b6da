"""Skill files: `skills/<name>.md` with front matter (name, description, when).

Read through the loadout's stat-checked cache, so an unchanged skills
directory costs one stat per file per turn. `kept_skills` is what the prompt's
view and the turn's grading read: the skills worked out again only when a file
or the directory's listing changed (`FileCache.kept`, one key for both, so the
files are parsed once per change, not once per reader and turn).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bridge.core import frontmatter
from bridge.core.filecache import FileCache
from bridge.types.tenant_dirs import TenantDirs

SKILL_FILE = re.compile(r"^([a-z0-9][a-z0-9_-]{0,63})\.md$")


@dataclass(frozen=True, slots=True)
class Skill:
    name: str  # the file stem: the key of its grade
    description: str
    when: str
    body: str


def kept_skills(dirs: TenantDirs, cache: FileCache) -> list[Skill]:
    """`read_skills`, kept while no skill file and not the listing changed (the same
    list each time: its readers do not change it)."""
    return cache.kept(("skills", str(dirs.skills)), lambda: read_skills(dirs, cache))


def read_skills(dirs: TenantDirs, cache: FileCache) -> list[Skill]:
    out: list[Skill] = []
    for filename in sorted(cache.listdir(dirs.skills)):
        match = SKILL_FILE.fullmatch(filename)
        if match is None:
            continue
        text = cache.read(dirs.skills / filename)
        if text is None:
            continue
        found = frontmatter.split(text) or frontmatter.FrontMatter({}, text)
        meta = found.unquoted()
        out.append(
            Skill(
                name=match.group(1),
                description=meta.get("description", ""),
                when=meta.get("when", ""),
                body=found.body.strip(),
            )
        )
    return out
