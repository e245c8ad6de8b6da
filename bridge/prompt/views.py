"""Read-only views of the stores blocks 7-9 render: skills, style bullets, personal tools.

Other parts fill these stores (grading, the style learner, the forge); the
loadout only reads them through these protocols. The file-based defaults work
today: skills from `skills/<name>.md` front matter with grades from an
injected source, style bullets from an injected source (none by default),
personal tools from `forge/tools/me.<name>.json` metadata.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from bridge.core import frontmatter
from bridge.core.filecache import FileCache, sig
from bridge.types.tenant_dirs import TenantDirs


class SkillRow(NamedTuple):
    name: str
    description: str
    grade: float


class BulletRow(NamedTuple):
    bid: str
    text: str
    state: str  # "live" | "shadow"


class ToolRow(NamedTuple):
    name: str
    description: str
    last_used: float | None  # epoch seconds
    created: float  # epoch seconds


class SkillsView(Protocol):
    def active(self, dirs: TenantDirs) -> Sequence[SkillRow]: ...


class StyleView(Protocol):
    def bullets(self, dirs: TenantDirs) -> Sequence[BulletRow]:
        """Live and shadow bullets; the snapshot decides which shadows a turn shows."""
        ...


def shadow_cohort(msg_id: str, bullet_id: str) -> bool:
    """Whether a shadow bullet is shown on a turn: its own bit, sha256("msg_id:bullet_id").

    Each bullet has its own cohort bit per turn, so two shadow bullets are shown
    independently and the learner's A/B of each measures only that bullet.
    """
    return hashlib.sha256(f"{msg_id}:{bullet_id}".encode()).digest()[0] & 1 == 1


class PersonalToolsView(Protocol):
    def tools(self, dirs: TenantDirs) -> Sequence[ToolRow]: ...


Grades = Callable[[TenantDirs], Mapping[str, float]]
_SKILL_FILE = re.compile(r"^([a-z0-9][a-z0-9_.-]{0,63})\.md$")
_TOOL_META = re.compile(r"^me\.([a-z0-9_]{1,48})\.json$")


def no_grades(dirs: TenantDirs) -> Mapping[str, float]:
    return {}


class DirRows:
    """Rows parsed from one directory, reused while its listing is unchanged.

    Roost writes these directories with atomic renames, which change the
    directory's mtime; an in-place hand edit of a file is picked up at the
    next full re-check, at most `recheck_s` seconds later.
    """

    def __init__(self, recheck_s: float = 2.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._recheck_s = recheck_s
        self._clock = clock
        self._memo: dict[str, tuple[object, float, Any]] = {}

    def get(self, directory: str, build: Callable[[], Any]) -> Any:
        now = self._clock()
        stat = sig(directory)
        hit = self._memo.get(directory)
        if hit is not None and hit[0] == stat and now - hit[1] < self._recheck_s:
            return hit[2]
        rows = build()
        self._memo[directory] = (stat, now, rows)
        return rows


class FileSkills:
    """Skills from `skills/<name>.md`; only those the grade source rates above 0."""

    def __init__(
        self,
        grades: Grades = no_grades,
        cache: FileCache | None = None,
        rows: DirRows | None = None,
    ) -> None:
        self._grades = grades
        self._cache = cache or FileCache()
        self._rows = rows or DirRows()

    def active(self, dirs: TenantDirs) -> list[SkillRow]:
        grades = self._grades(dirs)
        if not grades:
            return []
        d = str(dirs.skills)
        listed = self._rows.get(d, lambda: self._scan(d))
        return [
            SkillRow(name, desc, grades[key])
            for key, name, desc in listed
            if grades.get(key, 0.0) > 0
        ]

    def _scan(self, d: str) -> list[tuple[str, str, str]]:
        out = []
        for filename in self._cache.listdir(d):
            m = _SKILL_FILE.match(filename)
            if not m:
                continue
            meta = frontmatter.fields(self._cache.read(os.path.join(d, filename)) or "")
            out.append((m.group(1), meta.get("name") or m.group(1), meta.get("description", "")))
        return out


class StaticStyle:
    """Bullets from an injected source (callable per tenant); none by default."""

    def __init__(self, source: Callable[[TenantDirs], Sequence[BulletRow]] | None = None) -> None:
        self._source = source

    def bullets(self, dirs: TenantDirs) -> Sequence[BulletRow]:
        return tuple(BulletRow(*row) for row in self._source(dirs)) if self._source else ()


def _seconds(value: object) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        from datetime import datetime

        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


class FileTools:
    """Personal tools from `forge/tools/me.<name>.json` (name, description, created, last_used).

    Times are epoch seconds or ISO 8601; `created_ms` / `last_used_ms` (milliseconds,
    as the forge writes) are read too. Without a creation time the file's mtime is used.
    """

    def __init__(self, cache: FileCache | None = None, rows: DirRows | None = None) -> None:
        self._cache = cache or FileCache()
        self._rows = rows or DirRows()

    def tools(self, dirs: TenantDirs) -> list[ToolRow]:
        rows: list[ToolRow] = self._rows.get(str(dirs.tools), lambda: self._scan(dirs.tools))
        return rows

    def _scan(self, d: Path) -> list[ToolRow]:
        out = []
        for filename in self._cache.listdir(d):
            m = _TOOL_META.match(filename)
            if not m:
                continue
            try:
                meta = json.loads(self._cache.read(d / filename) or "")
            except ValueError:
                continue
            if not isinstance(meta, dict):
                continue
            created = _seconds(meta.get("created"))
            if created is None and isinstance(meta.get("created_ms"), int):
                created = meta["created_ms"] / 1000
            if created is None:
                try:
                    created = (d / filename).stat().st_mtime
                except OSError:
                    continue
            last = _seconds(meta.get("last_used"))
            if last is None and isinstance(meta.get("last_used_ms"), int):
                last = meta["last_used_ms"] / 1000
            desc = str(meta.get("description", ""))
            out.append(ToolRow(m.group(1), desc, last, created))
        return out
