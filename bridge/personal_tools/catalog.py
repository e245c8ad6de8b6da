"""Each tenant's saved tools, found cheaply every turn.

Metadata (`forge/tools/me.<name>.json`) is read through the loadout's
stat-checked cache; usage (calls, errors, last use) comes from the forge's
usage store. One `ToolLibrary` per tenant root, made on first use.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridge.core.filecache import FileCache
from forge.library import ToolLibrary
from forge.names import BadName, check_name
from forge.usage import Usage


@dataclass(frozen=True, slots=True)
class Entry:
    name: str  # bare name
    description: str
    schema: dict[str, Any]
    sha256: str
    created_ms: int
    secrets: tuple[str, ...]


class ToolCatalog:
    def __init__(self, cache: FileCache, clock_ms: Callable[[], int]) -> None:
        self._cache = cache
        self._clock_ms = clock_ms
        self._libraries: dict[Path, ToolLibrary] = {}
        self._dirs: dict[str, str] = {}

    def _tools_dir(self, tenant_root: Path) -> str:
        """`<root>/forge/tools`, worked out once per tenant root."""
        key = str(tenant_root)
        directory = self._dirs.get(key)
        if directory is None:
            directory = self._dirs[key] = os.path.join(key, "forge", "tools")
        return directory

    def library(self, tenant_root: Path) -> ToolLibrary:
        lib = self._libraries.get(tenant_root)
        if lib is None:
            lib = ToolLibrary(tenant_root / "forge" / "tools", self._clock_ms)
            self._libraries[tenant_root] = lib
        return lib

    def entries(self, tenant_root: Path) -> list[Entry]:
        directory = self._tools_dir(tenant_root)
        out: list[Entry] = []
        for filename in sorted(self._cache.listdir(directory)):
            if not (filename.startswith("me.") and filename.endswith(".json")):
                continue
            try:
                check_name(filename[3:-5])
                record = json.loads(self._cache.read(os.path.join(directory, filename)) or "")
                out.append(
                    Entry(
                        record["name"],
                        record["description"],
                        record["schema"],
                        record["sha256"],
                        int(record["created_ms"]),
                        tuple(record.get("secrets", ())),
                    )
                )
            except (BadName, ValueError, KeyError, TypeError):
                continue
        return out

    def usage(self, tenant_root: Path) -> dict[str, Usage]:
        if not (tenant_root / "forge" / "tools" / "usage.sqlite").exists():
            return {}
        return self.library(tenant_root).usage.all()
