"""The last removed version of each saved tool, kept so `/tool undo me.NAME` brings it back.

`/tool rm me.NAME` deletes the saved tool at once (the forge's library forgets
it and its usage); its exact version (name, description, source, hash, where it
was saved from, when it was first saved) and its usage (calls, errors, last use)
are first written to `removed/me.NAME.json` in the tenant's tools directory
(private, like the tools; the library lists only `me.*.json` of its own directory,
so a removed tool is never offered). One version per name: the newest removal
replaces an older one; an undo consumes it. A file kept by an older roost, without
the usage, reads as never used.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bridge.core.atomic import remove, write_text
from forge.atomic import private_dir
from forge.usage import Usage

if TYPE_CHECKING:  # the forge's library (and its policy compiler) only when a tool is removed
    from forge.library import SavedTool

REMOVED_DIR = "removed"


@dataclass(frozen=True, slots=True)
class Removed:
    name: str
    description: str
    source: str
    sha256: str
    saved_from: str
    created_ms: int | None = None
    calls: int = 0
    errors: int = 0
    last_used_ms: int | None = None

    @property
    def usage(self) -> Usage:
        return Usage(self.calls, self.errors, self.last_used_ms)


_TEXT = ("name", "description", "source", "sha256", "saved_from")


def _path(tools_dir: Path, name: str) -> Path:
    return tools_dir / REMOVED_DIR / f"me.{name}.json"


def keep(tools_dir: Path, tool: SavedTool) -> None:
    """Write `tool`'s version where `read` finds it (before the library removes it)."""
    spec, used = tool.spec, tool.usage
    kept = Removed(
        spec.name,
        spec.description,
        spec.source,
        spec.sha256,
        tool.saved_from,
        tool.created_ms,
        used.calls,
        used.errors,
        used.last_used_ms,
    )
    private_dir(tools_dir / REMOVED_DIR)
    write_text(_path(tools_dir, spec.name), json.dumps(asdict(kept), ensure_ascii=False))


def read(tools_dir: Path, name: str) -> Removed | None:
    """The last removed version of me.`name`, or None (never removed, undone, unreadable)."""
    try:
        data = json.loads(_path(tools_dir, name).read_text(encoding="utf-8"))
        name_, description, source, sha256, saved_from = (str(data[k]) for k in _TEXT)
        return Removed(
            name_,
            description,
            source,
            sha256,
            saved_from,
            _whole(data.get("created_ms")),
            _whole(data.get("calls")) or 0,
            _whole(data.get("errors")) or 0,
            _whole(data.get("last_used_ms")),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _whole(value: object) -> int | None:
    """A count or a time in ms as written by `keep`; anything else (missing, a file of an
    older roost, hand-edited): None."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def forget(tools_dir: Path, name: str) -> None:
    remove(_path(tools_dir, name))
