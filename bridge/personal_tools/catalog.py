"""Each tenant's saved tools, found cheaply every turn.

Metadata (`me.<name>.json` in the tenant's tools directory) is read through
the loadout's stat-checked cache and parsed by `forge.toolmeta`, the one
parser, once per version of the text (a turn whose files did not change parses
nothing); usage (calls, errors, last use) comes from the forge's usage store, a SQLite
file in the same directory: a memo of the prompt depends on that directory's
inotify generation for it (`FileCache.depend_on`).
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
        # path -> (the cached text object it was parsed from, its metadata or None: bad)
        self._parsed: dict[str, tuple[str, ToolMeta | None]] = {}

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
            meta = self._meta(os.path.join(tools_dir, filename), name)
            if meta is not None:
                out.append(meta)
        return out

    def _meta(self, path: str, name: str) -> ToolMeta | None:
        """The file's metadata (None: it does not parse), parsed again only when the
        stat-checked cache hands out a different text object (the file changed)."""
        text = self._cache.read(path) or ""
        hit = self._parsed.get(path)
        if hit is not None and hit[0] is text:
            return hit[1]
        try:
            meta: ToolMeta | None = loads(text, name)
        except BadMeta:
            meta = None
        if len(self._parsed) >= 4096:
            self._parsed.clear()
        self._parsed[path] = (text, meta)
        return meta

    @property
    def files(self) -> FileCache:
        """The cache every metadata file and listing is read through."""
        return self._cache

    def usage(self, tools_dir: Path) -> dict[str, Usage]:
        """Calls and last use per tool, from the forge's usage database in `tools_dir`
        (a memo being recorded depends on the whole directory: SQLite writes there)."""
        if self._cache.stat_key(tools_dir / USAGE_FILE) is None:
            return {}
        self._cache.depend_on(tools_dir)
        return self.library(tools_dir).usage.all()
