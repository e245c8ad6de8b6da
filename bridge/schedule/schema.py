"""The schedule tables (`jobs`, `outbox`) described.

The tables live in `bridge.storage.schema_sqlite` (the schedule migration,
with its PostgreSQL text in `bridge.storage.schema`); this module describes
them. Times are integer milliseconds since the epoch, UTC.

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
