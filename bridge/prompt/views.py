"""Read-only views of the stores blocks 7-9 render: skills, style bullets, personal tools.

Other parts fill these stores (grading, the style learner, the forge); the
loadout only reads them through these protocols. A view may declare what its
answer is made from (`declared`: database tables, a file cache), so the
prompt's memo can keep the answer until one of those changes. The file-based defaults work
today: skills from `skills/<name>.md` front matter with grades from an
injected source, style bullets from an injected source (none by default),
personal tools come from the forge's catalog (`bridge/personal_tools/view.py`).
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
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


class Declared(NamedTuple):
    """What a view's answer for a tenant is made from, as the view declares it."""

    tables: tuple[str, ...]  # database tables it reads the tenant's rows of
    files: FileCache | None  # the cache every file it reads goes through (None: no files)


def declared(view: object) -> Declared | None:
    """A view's `tables` and `files` attributes (None: it declares nothing, so the
    prompt's memo asks it again on every turn).

    A view that declares them promises: its answer for a tenant depends only on
    those tables' rows of the tenant and on files read through that cache."""
    tables = getattr(view, "tables", None)
    if tables is None:
        return None
    return Declared(tuple(tables), getattr(view, "files", None))


Grades = Callable[[TenantDirs], Mapping[str, float]]
_SKILL_FILE = re.compile(r"^([a-z0-9][a-z0-9_.-]{0,63})\.md$")


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
    """Skills from `skills/<name>.md`; only those the grade source rates above 0.

    Declares its inputs (`declared`) only without a grade source: grades from a
    callable are asked for on every turn."""

    def __init__(
        self,
        grades: Grades = no_grades,
        cache: FileCache | None = None,
        rows: DirRows | None = None,
    ) -> None:
        self._grades = grades
        self._cache = cache or FileCache()
        self._rows = rows or DirRows()
        self.tables: tuple[str, ...] | None = () if grades is no_grades else None
        self.files: FileCache | None = None  # with no grades, no file is read

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
        self.tables: tuple[str, ...] | None = () if source is None else None
        self.files: FileCache | None = None

    def bullets(self, dirs: TenantDirs) -> Sequence[BulletRow]:
        return tuple(BulletRow(*row) for row in self._source(dirs)) if self._source else ()
