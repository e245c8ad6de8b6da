"""Each tenant's saved tools, found cheaply every turn.

Metadata (`me.<name>.json` in the tenant's tools directory) is read through
the loadout's stat-checked cache and parsed by `forge.toolmeta`, the one
parser, once per version of the text (a turn whose files did not change parses
nothing); usage (calls, errors, last use) comes from the forge's usage store, a SQLite
file in the same directory: a memo of the prompt depends on that directory's
inotify generation for it (`FileCache.depend_on`).
One `ToolLibrary` per tools directory, made on first use (`forge.library` and its
policy compiler are imported then: a turn that only lists tools does not need them).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bridge.core.filecache import FileCache
from forge.toolmeta import BadMeta, ToolMeta, loads, name_of
from forge.usage import FILENAME as USAGE_FILE
from forge.usage import Usage

if TYPE_CHECKING:
    from forge.library import ToolLibrary


class ToolCatalog:
    def __init__(self, cache: FileCache, clock_ms: Callable[[], int]) -> None:
        self._cache = cache
        self._clock_ms = clock_ms
        self._libraries: dict[Path, ToolLibrary] = {}
        # path -> (the cached text object it was parsed from, its metadata or None: bad)
        self._parsed: dict[str, tuple[str, ToolMeta | None]] = {}
        # tools dir -> (the usage file's inode, a connection kept open to read it)
        self._readers: dict[Path, tuple[int, sqlite3.Connection]] = {}

    def library(self, tools_dir: Path) -> ToolLibrary:
        lib = self._libraries.get(tools_dir)
        if lib is None:
            from forge.library import ToolLibrary  # the forge's writer: not for a read

            lib = self._libraries[tools_dir] = ToolLibrary(tools_dir, self._clock_ms)
        return lib

    def entries(self, tools_dir: Path) -> tuple[ToolMeta, ...]:
        """The tools saved in `tools_dir`, by name; kept while no metadata file and the
        listing changed (`FileCache.kept`: the usage database written beside them costs
        a look at each file's own generation, no read and no parse)."""
        return self._cache.kept(("tool entries", str(tools_dir)), lambda: self._entries(tools_dir))

    def _entries(self, tools_dir: Path) -> tuple[ToolMeta, ...]:
        out: list[ToolMeta] = []
        for filename in sorted(self._cache.listdir(tools_dir)):
            name = name_of(filename)
            if name is None:
                continue
            meta = self._meta(os.path.join(tools_dir, filename), name)
            if meta is not None:
                out.append(meta)
        return tuple(out)

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
        (a memo being recorded depends on the whole directory: SQLite writes there).

        Read through one connection per directory kept open: opening and closing one
        creates and removes the database's -wal and -shm files, events in the very
        directory the memo depends on; a kept connection reads without any."""
        path = tools_dir / USAGE_FILE
        key = self._cache.stat_key(path)
        if key is None:
            return {}
        self._cache.depend_on(tools_dir)
        kept = self._readers.get(tools_dir)
        if kept is not None and kept[0] != key[0]:  # another file now (forgotten, made anew)
            kept[1].close()
            kept = None
        try:
            if kept is None:
                conn = sqlite3.connect(path, timeout=10, isolation_level=None)
                kept = self._readers[tools_dir] = (key[0], conn)
            rows = kept[1].execute("SELECT name, calls, errors, last_used_ms FROM usage").fetchall()
        except sqlite3.Error:  # no table yet, or locked: the forge's own reader
            return self.library(tools_dir).usage.all()
        return {r[0]: Usage(r[1], r[2], r[3]) for r in rows}
