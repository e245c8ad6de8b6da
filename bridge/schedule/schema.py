"""The schedule tables (`jobs`, `outbox`) described, and the transaction helper.

The tables live in `bridge.storage.schema_sqlite` (the schedule migration,
run by `bridge.core.db`); this module describes them and holds the transaction helper. Times are
integer milliseconds since the epoch, UTC.

jobs: one row per job, keyed by (tenant, id); `spec` is the recurrence as the
person wrote it ('' for a one-shot), `next_run_ms` the next slot (NULL once
done), `last_digest` a hash of the last result (for "post only on change").
The partial index `jobs_due` holds only active jobs, so `due()` and the
scheduler's "when is the next one" read a few index entries however many
paused or finished jobs there are.

outbox: one row per message to deliver. `(tenant, channel, chat, key)` is
UNIQUE: a key is enqueued, hence delivered, at most once per chat. A queued
row is claimable when `due_ms <= now`; a claim pushes `due_ms` forward by the
lease, so a claim that never completes (crash) becomes claimable again.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction (BEGIN IMMEDIATE ... COMMIT, ROLLBACK on any error).

    Inside an open transaction it joins it instead, so two stores' writes on one
    connection (a job's `mark_run` and its outbox entry) commit together or not
    at all. The connection must be in autocommit mode (`isolation_level=None`),
    as `bridge.core.db.connect` opens it.
    """
    if conn.in_transaction:
        yield conn
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
