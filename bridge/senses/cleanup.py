"""The inbox is swept: attachments older than `[limits] attachment_keep_hours` go.

Only regular files (and stray links) directly in a tenant's
`workspace/inbox` are removed, by their modification time against the
injected clock. A file a tool kept (moved or copied elsewhere in the
workspace) is not in the inbox, so it stays.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from bridge.types.tenant_dirs import TenantDirs

log = logging.getLogger(__name__)


def sweep_inbox(inbox: Path, now: float, keep_s: float) -> int:
    """Remove the inbox's files last changed before `now - keep_s`; returns how many."""
    removed = 0
    try:
        entries = list(os.scandir(inbox))
    except (FileNotFoundError, NotADirectoryError):
        return 0
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode) or info.st_mtime >= now - keep_s:
                continue
            os.unlink(entry.path)
            removed += 1
        except FileNotFoundError:
            continue
    return removed


def sweep_home(home: Path, now: float, keep_s: float) -> int:
    """Sweep every tenant's inbox under `home`; a failure is logged, the rest go on."""
    removed = 0
    tenants = home / "tenants"
    for tdir in sorted(tenants.iterdir()) if tenants.is_dir() else ():
        try:
            dirs = TenantDirs.of(home, tdir.name)
            removed += sweep_inbox(dirs.inbox, now, keep_s)
        except ValueError:
            continue  # not a tenant directory roost made
        except OSError as exc:
            log.warning("senses: could not sweep an inbox (%s)", exc.strerror)
    return removed
