"""The last removed version of each saved tool, kept so `/tool undo me.NAME` brings it back.

`/tool rm me.NAME` deletes the saved tool at once (the forge's library forgets
it and its usage); its exact version (name, description, source, hash, where it
was saved from) is first written to `removed/me.NAME.json` in the tenant's tools
directory (private, like the tools; the library lists only `me.*.json` of its
own directory, so a removed tool is never offered). One version per name: the
newest removal replaces an older one; an undo consumes it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bridge.core.atomic import remove, write_text
from forge.atomic import private_dir

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


def _path(tools_dir: Path, name: str) -> Path:
    return tools_dir / REMOVED_DIR / f"me.{name}.json"


def keep(tools_dir: Path, tool: SavedTool) -> None:
    """Write `tool`'s version where `read` finds it (before the library removes it)."""
    spec = tool.spec
    kept = Removed(spec.name, spec.description, spec.source, spec.sha256, tool.saved_from)
    private_dir(tools_dir / REMOVED_DIR)
    write_text(_path(tools_dir, spec.name), json.dumps(asdict(kept), ensure_ascii=False))


def read(tools_dir: Path, name: str) -> Removed | None:
    """The last removed version of me.`name`, or None (never removed, undone, unreadable)."""
    try:
        data = json.loads(_path(tools_dir, name).read_text(encoding="utf-8"))
        return Removed(**{k: str(data[k]) for k in Removed.__dataclass_fields__})
    except (OSError, ValueError, KeyError, TypeError):
        return None


def forget(tools_dir: Path, name: str) -> None:
    remove(_path(tools_dir, name))
