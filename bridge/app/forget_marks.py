"""The markers of unfinished `roost forget` runs, and the check that bars their tenants.

`$ROOST_HOME/forgetting/<tid>.json` stands while a tenant is being forgotten
(`bridge.app.forgetting` writes and removes it). `roost forget` writes it
holding the home lock exclusively, so never under a running daemon: a daemon
meets a marker an interrupted run left, from its start until a re-run (with
the daemon stopped again) finishes it. The daemon's access check
asks on every message (`ForgetMarks.barred`; `forgetting()` for a process
without the daemon's file cache) and `roost doctor` lists `pending()`; a module
of its own so that they need not import the export and deletion code.

`ForgetMarks` answers through the daemon's watched `FileCache`: a missing
marker is vouched for by the entries generation of `forgetting/` (inotify), so
while nothing was created, removed or renamed there the check costs one look at
the inotify queue and no `stat`. A marker written by any other process
(atomically: a rename into `forgetting/`) queues its event before the
rename returns, so the next message is refused, as with the `stat`. Without a
watch, or when `forgetting/` cannot be watched, the cache makes the `stat`.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from bridge.core.filecache import FileCache
from bridge.types.tenant_dirs import check_tenant_id

FOLDER = "forgetting"


def marker_path(home: Path, tenant: str) -> Path:
    return home / FOLDER / f"{check_tenant_id(tenant)}.json"


def forgetting(home: Path, tenant: str) -> bool:
    """Whether an unfinished `roost forget` bars `tenant` (one stat)."""
    try:
        return marker_path(home, tenant).exists()
    except ValueError:
        return False


class ForgetMarks:
    """`barred(tenant)`: `forgetting(home, tenant)` through a watched file cache (the
    module says how). Makes `forgetting/` (mode 0700) so that the watch can vouch for it."""

    _MAX_PATHS = 4096

    def __init__(self, home: Path, cache: FileCache) -> None:
        self._home = home
        self._cache = cache
        self._paths: dict[str, str] = {}  # tenant -> its marker's path
        with contextlib.suppress(OSError):  # if not, the cache makes the `stat` every time
            (home / FOLDER).mkdir(mode=0o700, exist_ok=True)

    def barred(self, tenant: str) -> bool:
        """Whether an unfinished `roost forget` bars `tenant`."""
        path = self._paths.get(tenant)
        if path is None:
            try:
                path = str(marker_path(self._home, tenant))
            except ValueError:
                return False
            if len(self._paths) >= self._MAX_PATHS:
                self._paths.clear()
            self._paths[tenant] = path
        return self._cache.stat_key(path) is not None


def pending(home: Path) -> list[str]:
    """Tenants whose forgetting was started and not finished."""
    folder = home / FOLDER
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.json"))
