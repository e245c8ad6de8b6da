"""Versioned schema migrations: one logical list, each step with its SQL per backend.

A `Migration` is (version, what, sqlite, postgres): versions are 1, 2, 3, ...
with no gap, and a step's two texts make the same tables (PostgreSQL's
differ only where the dialects do: identity columns, BIGINT for times in
ms, DOUBLE PRECISION for REAL). A backend's `migrate(list)` runs each step
it has not run in a transaction of its own that also records the version:
SQLite in `PRAGMA user_version` (so a `roost.db` migrated by
`bridge.core.db`, whose list is steps 1..N here, is at step N), PostgreSQL in
`storage_schema` under an advisory lock (two instances starting together
migrate once). A step killed half-way rolls back whole; running the list
again continues from the last complete step. An upgrade of an existing schema
(`pending` finds steps to run after step 1 or later) is one INFO line naming both
steps; a new database and a start with nothing to run say nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from bridge.storage.errors import MigrationError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    what: str  # one line: which store, which tables
    sqlite: str
    postgres: str


def check_list(migrations: Sequence[Migration]) -> None:
    """Versions 1..N in order; raise MigrationError otherwise (a programming error)."""
    for expected, m in enumerate(migrations, start=1):
        if m.version != expected:
            raise MigrationError(f"migration {m.what!r} has version {m.version}, not {expected}")


def pending(migrations: Sequence[Migration], current: int) -> list[Migration]:
    """The steps after `current`; MigrationError when the database is newer than the list."""
    check_list(migrations)
    if current > len(migrations):
        raise MigrationError(
            f"the database schema is at version {current}, newer than this roost knows "
            f"({len(migrations)}): run the newer roost, or restore a backup"
        )
    steps = list(migrations[current:])
    if steps and current > 0:  # an existing database, made by an older roost
        log.info("upgrading the database schema from step %d to step %d", current, len(migrations))
    return steps
