"""The undo journal of a tenant's skills: each save or removal recorded before it is made.

`skills/.journal.json` (not a skill file: only `<name>.md` is read as one)
holds the most recent changes, newest last: the skill's name, the file's text
before the change (None: there was no file) and its grade row before the
change (None: never graded), so `/skill undo` puts back both the procedure
and the grade it had. Written atomically, mode 0600, like memory's journal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridge.core.atomic import write_text
from bridge.skills.proposals import NAME

JOURNAL_NAME = ".journal.json"
KEEP = 20


@dataclass(frozen=True, slots=True)
class Change:
    op: str  # save | rm
    name: str
    at: float
    before: str | None  # the file's text before the change
    grade: dict[str, Any] | None  # the grade row before the change

    def to_json(self) -> dict[str, object]:
        return {
            "op": self.op,
            "name": self.name,
            "at": self.at,
            "before": self.before,
            "grade": self.grade,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Change:
        before, grade = raw.get("before"), raw.get("grade")
        name = raw.get("name")
        if raw.get("op") not in ("save", "rm") or not isinstance(name, str):
            raise ValueError("not a journal entry")
        if not NAME.fullmatch(name):
            raise ValueError("not a skill name")  # never a path outside skills/
        return cls(
            str(raw["op"]),
            str(raw["name"]),
            float(raw["at"]),
            before if isinstance(before, str) else None,
            grade if isinstance(grade, dict) else None,
        )


def _path(skills_dir: Path) -> Path:
    return skills_dir / JOURNAL_NAME


def load(skills_dir: Path) -> list[Change]:
    try:
        raw = json.loads(_path(skills_dir).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return []  # an unreadable journal means nothing to undo, never a crash
    out = []
    for item in raw if isinstance(raw, list) else []:
        try:
            out.append(Change.from_json(item))
        except (AttributeError, KeyError, TypeError, ValueError):
            continue
    return out


def _store(skills_dir: Path, changes: list[Change]) -> None:
    data = json.dumps([c.to_json() for c in changes[-KEEP:]], ensure_ascii=False)
    write_text(_path(skills_dir), data + "\n")


def record(skills_dir: Path, change: Change) -> None:
    _store(skills_dir, [*load(skills_dir), change])


def pop(skills_dir: Path) -> Change | None:
    changes = load(skills_dir)
    if not changes:
        return None
    last = changes.pop()
    _store(skills_dir, changes)
    return last
