"""The SQL of the schedule tables (`jobs`, `outbox`) and the transaction helper.

`SCHEDULE_MIGRATION` is one entry for `bridge.core.db.MIGRATIONS` (appended,
never edited once shipped). `db.migrate` splits a migration on ";", so no
statement, comment or default below may contain one. Times are integer
milliseconds since the epoch, UTC.

jobs: one row per job, keyed by (tenant, id); `spec` is the recurrence as the
person wrote it ('' for a one-shot), `next_run_ms` the next slot (NULL once
done). The partial index `jobs_due` holds only active jobs, so `due()` and the
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

SCHEDULE_MIGRATION = """
CREATE TABLE jobs (
    tenant TEXT NOT NULL, id TEXT NOT NULL,
    channel TEXT NOT NULL, chat TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('reminder', 'turn', 'tool')),
    spec TEXT NOT NULL, payload TEXT NOT NULL, tz TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('active', 'paused', 'done')),
    next_run_ms INTEGER, created_ms INTEGER NOT NULL, last_run_ms INTEGER,
    runs INTEGER NOT NULL DEFAULT 0, fail_count INTEGER NOT NULL DEFAULT 0,
    last_error TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (tenant, id)
);
CREATE INDEX jobs_due ON jobs (next_run_ms) WHERE state = 'active';
CREATE INDEX jobs_chat ON jobs (tenant, channel, chat);
CREATE TABLE outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL, channel TEXT NOT NULL, chat TEXT NOT NULL,
    key TEXT NOT NULL, text TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('queued', 'delivered', 'dead')),
    created_ms INTEGER NOT NULL, due_ms INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT NOT NULL DEFAULT '', done_ms INTEGER,
    UNIQUE (tenant, channel, chat, key)
);
CREATE INDEX outbox_due ON outbox (due_ms) WHERE state = 'queued';
CREATE INDEX outbox_chat_queue ON outbox (tenant, channel, chat, id) WHERE state = 'queued';
CREATE INDEX outbox_done ON outbox (done_ms) WHERE state != 'queued'
"""


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
