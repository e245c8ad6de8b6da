"""Skill files: `skills/<name>.md` with front matter (name, description, when).

Read through the loadout's stat-checked cache, so an unchanged skills
directory costs one stat per file per turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from bridge.core import frontmatter
from bridge.core.filecache import FileCache

SKILL_FILE = re.compile(r"^([a-z0-9][a-z0-9_-]{0,63})\.md$")


@dataclass(frozen=True, slots=True)
class Skill:
    name: str  # the file stem: the key of its grade
    description: str
    when: str
    body: str


@lru_cache(maxsize=256)
def skills_dir(tenant_root: Path) -> Path:
    """`<root>/skills`, made once per tenant root (a path, not a file check)."""
    return tenant_root / "skills"


def read_skills(skills_dir: Path, cache: FileCache) -> list[Skill]:
    out: list[Skill] = []
    for filename in sorted(cache.listdir(skills_dir)):
        match = SKILL_FILE.match(filename)
        if match is None:
            continue
        text = cache.read(skills_dir / filename)
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
