"""One place that knows a message met a database server that went away, and what roost says.

With `[database] url` (PostgreSQL), the server can go away mid-run: the storage layer
then raises `DatabaseUnavailable` for every statement, rolls back any open transaction,
and reconnects with backoff in the background (`bridge.storage.postgres.health`). A
message that meets it was not taken: its turn stopped at the first statement that failed
(the statements of one unit all committed or none did), so its exchange is not in the
session. `database_down(exc)` tells that case (also as the cause or context of another
exception), and the core answers `DATABASE_DOWN` with one log line, not the generic
error reply and a traceback: it is an operator's fault to fix, not a bug.
"""

from __future__ import annotations

from bridge.core.causes import caused_by
from bridge.storage.errors import DatabaseUnavailable

DATABASE_DOWN = (
    "I can't reach my database right now, so I could not take this message. "
    "Please send it again in a minute."
)


def database_down(exc: BaseException) -> bool:
    """Whether `exc` (or what it was raised from) is the database server gone away."""
    return caused_by(exc, lambda e: isinstance(e, DatabaseUnavailable))
