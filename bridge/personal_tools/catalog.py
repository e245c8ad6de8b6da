"""Each tenant's saved tools, found cheaply every turn.

Metadata (`me.<name>.json` in the tenant's tools directory) is read through
the loadout's stat-checked cache and parsed by `forge.toolmeta`, the one
parser; usage (calls, errors, last use) comes from the forge's usage store.
One `ToolLibrary` per tools directory, made on first use.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from bridge.core.filecache import FileCache
from forge.library import ToolLibrary
from forge.toolmeta import BadMeta, ToolMeta, loads, name_of
from forge.usage import FILENAME as USAGE_FILE
from forge.usage import Usage


class ToolCatalog:
    def __init__(self, cache: FileCache, clock_ms: Callable[[], int]) -> None:
        self._cache = cache
        self._clock_ms = clock_ms
        self._libraries: dict[Path, ToolLibrary] = {}

    def library(self, tools_dir: Path) -> ToolLibrary:
        lib = self._libraries.get(tools_dir)
        if lib is None:
            lib = self._libraries[tools_dir] = ToolLibrary(tools_dir, self._clock_ms)
        return lib

    def entries(self, tools_dir: Path) -> list[ToolMeta]:
        out: list[ToolMeta] = []
        for filename in sorted(self._cache.listdir(tools_dir)):
            name = name_of(filename)
            if name is None:
                continue
            try:
                out.append(loads(self._cache.read(os.path.join(tools_dir, filename)) or "", name))
            except BadMeta:
                continue
        return out

    def usage(self, tools_dir: Path) -> dict[str, Usage]:
        if not (tools_dir / USAGE_FILE).exists():
            return {}
        return self.library(tools_dir).usage.all()
