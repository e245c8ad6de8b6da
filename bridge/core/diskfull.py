"""One place that knows what a full disk looks like, and what roost says then.

`disk_full(exc)` is true for an `OSError` with ENOSPC or EDQUOT and for
SQLite's SQLITE_FULL ("database or disk is full"), also when either is the
cause or context of another exception (a store that wrapped it). The core
uses it at its handling points: a message whose state change meets a full
disk gets `DISK_FULL` instead of the generic error reply (`Core`), a tool
call gets it as its result so the model can still answer (`run_agent`), and
the bookkeeping after an answer (grading, the audit batch) that meets a
full disk is logged and skipped, never the answer (`TurnRunner`). Reads
need no space and go on working.
"""

from __future__ import annotations

import errno
import sqlite3

from bridge.core.causes import caused_by

FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
SQLITE_FULL = 13
DISK_FULL = (
    "Not saved: the disk is full, so this change could not be stored. Reading still works; "
    "try again once the operator has freed some space."
)
TOOL_DISK_FULL = (
    "error: the disk is full, so nothing was saved; tell the person, and do not retry now"
)


def _one(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in FULL_ERRNOS:
        return True
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        return code == SQLITE_FULL or "database or disk is full" in str(exc)
    return False


def disk_full(exc: BaseException) -> bool:
    """Whether `exc` (or what it was raised from) is a full disk."""
    return caused_by(exc, _one)
