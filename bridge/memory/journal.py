"""The undo journal of a tenant's memory: each change recorded before it is made.

`memory/.journal.json` holds the most recent changes (newest last), each with
the files it touches and their content before the change (None: the file did
not exist). Undo restores those files and drops the entry. A change may carry
a `ref` (`new_ref`): the handle of the undo button that names that very change
(`find`, `drop`), so a deletion can be undone after later changes. The journal
lives in the tenant's private memory directory, mode 0600, written atomically.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from bridge.core.atomic import write_text

JOURNAL_NAME = ".journal.json"
KEEP = 50


@dataclass(frozen=True, slots=True)
class Change:
    op: str  # save | delete | remember
    name: str
    type: str
    at: float
    before: dict[str, str | None]  # file name -> text before the change
    ref: str = ""  # the handle an undo button names this change by ('' : none)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "op": self.op,
            "name": self.name,
            "type": self.type,
            "at": self.at,
            "before": self.before,
        }
        if self.ref:
            out["ref"] = self.ref
        return out

    @classmethod
    def from_json(cls, raw: dict[str, object]) -> Change:
        before = raw.get("before")
        if not isinstance(before, dict):
            raise ValueError("journal entry without 'before'")
        return cls(
            str(raw["op"]),
            str(raw["name"]),
            str(raw.get("type", "")),
            float(str(raw["at"])),
            {str(k): None if v is None else str(v) for k, v in before.items()},
            str(raw.get("ref", "")),
        )


def new_ref() -> str:
    """A fresh handle for one change (8 hex digits)."""
    return os.urandom(4).hex()


def _path(memory_dir: Path) -> Path:
    return memory_dir / JOURNAL_NAME


def load(memory_dir: Path) -> list[Change]:
    try:
        raw = json.loads(_path(memory_dir).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except ValueError:
        return []  # an unreadable journal means nothing to undo, never a crash
    out = []
    for item in raw if isinstance(raw, list) else []:
        try:
            out.append(Change.from_json(item))
        except (KeyError, TypeError, ValueError):
            continue
    return out


def _store(memory_dir: Path, changes: list[Change]) -> None:
    data = json.dumps([c.to_json() for c in changes[-KEEP:]], ensure_ascii=False)
    write_text(_path(memory_dir), data + "\n")


def record(memory_dir: Path, change: Change) -> None:
    _store(memory_dir, [*load(memory_dir), change])


def pop(memory_dir: Path) -> Change | None:
    changes = load(memory_dir)
    if not changes:
        return None
    last = changes.pop()
    _store(memory_dir, changes)
    return last


def peek(memory_dir: Path) -> Change | None:
    changes = load(memory_dir)
    return changes[-1] if changes else None


def find(memory_dir: Path, ref: str) -> Change | None:
    """The change recorded under `ref` (None: never recorded, undone, or too old to keep)."""
    if not ref:
        return None
    return next((c for c in reversed(load(memory_dir)) if c.ref == ref), None)


def drop(memory_dir: Path, ref: str) -> None:
    """Forget the change recorded under `ref` (it was undone out of turn)."""
    if not ref:
        return
    changes = load(memory_dir)
    kept = [c for c in changes if c.ref != ref]
    if len(kept) != len(changes):
        _store(memory_dir, kept)
