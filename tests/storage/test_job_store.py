"""The job store (`bridge.schedule.jobs`) on both backends: create, list, limits (checked by
the creating statement), runs, the due index; every write one statement."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bridge.schedule.jobs import ALPHABET, ID_LENGTH, JobLimits, JobStore, LimitError
from bridge.storage.protocol import Database
from tests.masking import m
from tests.storage.conftest import OpenDb
from tests.storage.traced import traced

MIN = 60_000
HOUR = 60 * MIN
T0 = 1_800_000_000_000  # 2027-01-15, a fixed "now"


def next_run(spec: str, tz: str, after_ms: int) -> int | None:
    """A small real recurrence for these tests: "every <ms>" (slots on multiples of
    the period) or "at <ms>,<ms>,..." (explicit slots; None after the last)."""
    word, _, rest = spec.partition(" ")
    if word == "every":
        period = int(rest)
        return (after_ms // period + 1) * period
    if word == "at":
        return next((t for t in sorted(map(int, rest.split(","))) if t > after_ms), None)
    raise ValueError(f"unknown spec {spec!r}")


async def make(store: JobStore, tenant: str = "alice", chat: str = "42", **over: object) -> str:
    fields: dict[str, object] = {
        "tenant": tenant,
        "channel": "telegram",
        "chat": chat,
        "kind": "reminder",
        "spec": "",
        "payload": "take the bread out",
        "tz": "Europe/Berlin",
        "next_run_ms": T0 + 20 * MIN,
        "created_ms": T0,
    }
    fields.update(over)
    fields["payload"] = m(str(fields["payload"]))
    return (await store.create(**fields)).id  # type: ignore[arg-type]


@pytest.fixture
def store(db: Database) -> JobStore:
    return JobStore(db, next_run, JobLimits(max_jobs=5))


async def test_create_returns_a_short_id_and_the_row_reads_back(store: JobStore) -> None:
    job_id = await make(store, payload="call the dentist")
    assert len(job_id) == ID_LENGTH and set(job_id) <= set(ALPHABET)
    job = await store.get("alice", job_id)
    assert job is not None
    assert (job.kind, job.payload, job.tz, job.state) == (
        "reminder",
        "call the dentist",
        "Europe/Berlin",
        "active",
    )
    assert (job.next_run_ms, job.created_ms, job.runs, job.fail_count) == (T0 + 20 * MIN, T0, 0, 0)
    assert not job.recurring


async def test_a_job_survives_a_reopen(open_db: OpenDb) -> None:
    job_id = await make(JobStore(await open_db(), next_run))
    store = JobStore(await open_db(), next_run)
    assert [j.id for j in await store.list_jobs("alice")] == [job_id]


async def test_list_by_chat_and_by_tenant_soonest_first(store: JobStore) -> None:
    late = await make(store, chat="1", next_run_ms=T0 + 2 * HOUR)
    soon = await make(store, chat="1", next_run_ms=T0 + HOUR)
    other_chat = await make(store, chat="2")
    await make(store, tenant="bob", chat="1")
    assert [j.id for j in await store.list_jobs("alice", "telegram", "1")] == [soon, late]
    assert [j.id for j in await store.list_jobs("alice")] == [other_chat, soon, late]
    assert len(await store.list_jobs("bob")) == 1


async def test_another_tenant_cannot_see_or_touch_a_job(store: JobStore) -> None:
    job_id = await make(store, tenant="alice")
    assert await store.get("bob", job_id) is None
    assert not await store.remove("bob", job_id)
    assert not await store.pause("bob", job_id)
    assert not await store.resume("bob", job_id, T0)
    job = await store.get("alice", job_id)
    assert job is not None and job.state == "active"


async def test_ids_are_unique_per_tenant_and_collisions_are_retried(db: Database) -> None:
    ids = iter(["aaaaaa", "aaaaaa", "aaaaaa", "bbbbbb"])
    store = JobStore(db, next_run, new_id=lambda: next(ids))
    assert await make(store, tenant="alice") == "aaaaaa"
    assert await make(store, tenant="bob") == "aaaaaa"  # another tenant: the same id is free
    assert await make(store, tenant="alice") == "bbbbbb"  # one collision, retried


async def test_the_job_count_limit_refuses_with_a_clear_message(store: JobStore) -> None:
    ids = [await make(store) for _ in range(5)]
    with pytest.raises(LimitError) as refused:
        await make(store)
    assert "5" in refused.value.message and "/jobs" in refused.value.message
    await make(store, tenant="bob")  # the limit is per tenant
    await store.remove("alice", ids[0])
    await make(store)  # room again
    await store.mark_run("alice", ids[1], ran_ms=T0, next_run_ms=None)  # a done job does not count
    await make(store)
    assert len(await store.list_jobs("alice")) == 5


async def test_paused_jobs_count_towards_the_limit(store: JobStore) -> None:
    for _ in range(5):
        await store.pause("alice", await make(store))
    with pytest.raises(LimitError):
        await make(store)


async def test_a_recurrence_faster_than_the_minimum_interval_is_refused(store: JobStore) -> None:
    with pytest.raises(LimitError) as refused:
        await make(store, kind="turn", spec=f"every {MIN}", next_run_ms=T0 + MIN)
    assert "1 min" in refused.value.message and "5 min" in refused.value.message
    await make(store, kind="turn", spec=f"every {5 * MIN}", next_run_ms=T0 + 5 * MIN)


async def test_a_short_gap_later_in_the_recurrence_is_found(store: JobStore) -> None:
    slots = [T0 + k * HOUR for k in range(1, 11)] + [T0 + 10 * HOUR + MIN]
    with pytest.raises(LimitError):
        await make(store, spec="at " + ",".join(map(str, slots)), next_run_ms=slots[0])


async def test_an_over_long_payload_is_refused(store: JobStore) -> None:
    with pytest.raises(LimitError):
        await make(store, payload="x" * 4001)


async def test_an_unknown_kind_is_refused(store: JobStore) -> None:
    with pytest.raises(ValueError):
        await make(store, kind="shell")


async def test_mark_run_never_schedules_a_recurring_job_closer_than_the_minimum(
    store: JobStore,
) -> None:
    job_id = await make(store, spec=f"every {HOUR}", next_run_ms=T0 + HOUR)
    await store.mark_run("alice", job_id, ran_ms=T0 + HOUR, next_run_ms=T0 + HOUR + 1000)
    job = await store.get("alice", job_id)
    assert job is not None and job.next_run_ms == T0 + HOUR + 5 * MIN


async def test_a_one_shot_is_done_after_its_run_and_pruned_later(store: JobStore) -> None:
    job_id = await make(store)
    assert [j.id for j in await store.due(T0 + 20 * MIN)] == [job_id]
    assert await store.mark_run("alice", job_id, ran_ms=T0 + 20 * MIN, next_run_ms=None)
    assert await store.due(T0 + 99 * HOUR) == []
    assert await store.list_jobs("alice") == []
    assert [j.state for j in await store.list_jobs("alice", done=True)] == ["done"]
    assert await store.prune_done(T0 + 20 * MIN) == 0
    assert await store.prune_done(T0 + 21 * MIN) == 1
    assert await store.get("alice", job_id) is None


async def test_mark_run_on_a_removed_job_records_nothing(store: JobStore) -> None:
    job_id = await make(store)
    await store.remove("alice", job_id)
    assert not await store.mark_run("alice", job_id, ran_ms=T0, next_run_ms=T0 + HOUR)
    assert await store.get("alice", job_id) is None


async def test_failures_count_up_and_a_success_clears_them(store: JobStore) -> None:
    job_id = await make(store, spec=f"every {HOUR}", next_run_ms=T0 + HOUR)
    await store.mark_run(
        "alice", job_id, ran_ms=T0 + HOUR, next_run_ms=T0 + 2 * HOUR, error="E" * 999
    )
    await store.mark_run(
        "alice", job_id, ran_ms=T0 + 2 * HOUR, next_run_ms=T0 + 3 * HOUR, error="boom"
    )
    job = await store.get("alice", job_id)
    assert job is not None and (job.fail_count, job.last_error, job.runs) == (2, "boom", 2)
    await store.mark_run("alice", job_id, ran_ms=T0 + 3 * HOUR, next_run_ms=T0 + 4 * HOUR)
    job = await store.get("alice", job_id)
    assert job is not None and (job.fail_count, job.last_error, job.runs) == (0, "", 3)
    await store.mark_run(
        "alice", job_id, ran_ms=T0 + 4 * HOUR, next_run_ms=T0 + 5 * HOUR, error="E" * 999
    )
    job = await store.get("alice", job_id)
    assert job is not None and len(job.last_error) == 200


async def test_paused_jobs_are_not_due_and_resume_skips_missed_slots(store: JobStore) -> None:
    job_id = await make(store, spec=f"every {HOUR}", next_run_ms=T0 + HOUR)
    assert await store.pause("alice", job_id)
    assert not await store.pause("alice", job_id)  # already paused
    assert await store.due(T0 + 10 * HOUR) == []
    assert await store.resume("alice", job_id, T0 + 10 * HOUR + MIN)
    job = await store.get("alice", job_id)
    assert job is not None and (job.state, job.next_run_ms) == ("active", T0 + 11 * HOUR)
    assert not await store.resume("alice", job_id, T0)  # not paused


async def test_a_one_shot_resumed_after_its_time_runs_at_once(store: JobStore) -> None:
    job_id = await make(store)
    await store.pause("alice", job_id)
    await store.resume("alice", job_id, T0 + HOUR)
    assert [j.id for j in await store.due(T0 + HOUR)] == [job_id]


async def test_a_job_paused_while_it_ran_stays_paused(store: JobStore) -> None:
    job_id = await make(store, spec=f"every {HOUR}", next_run_ms=T0 + HOUR)
    await store.pause("alice", job_id)
    await store.mark_run("alice", job_id, ran_ms=T0 + HOUR, next_run_ms=T0 + 2 * HOUR)
    job = await store.get("alice", job_id)
    assert job is not None and job.state == "paused"


async def test_due_is_ordered_and_limited(store: JobStore) -> None:
    c = await make(store, next_run_ms=T0 + 3 * MIN)
    a = await make(store, next_run_ms=T0 + 1 * MIN)
    b = await make(store, next_run_ms=T0 + 2 * MIN)
    await make(store, next_run_ms=T0 + HOUR)
    assert [j.id for j in await store.due(T0 + 3 * MIN)] == [a, b, c]
    assert [j.id for j in await store.due(T0 + 3 * MIN, limit=2)] == [a, b]
    assert await store.earliest_ms() == T0 + MIN


async def test_mark_run_keeps_the_digest_unless_given_one(store: JobStore) -> None:
    job_id = await make(store, spec=f"every {HOUR}", next_run_ms=T0 + HOUR)
    await store.mark_run("alice", job_id, ran_ms=T0 + HOUR, next_run_ms=T0 + 2 * HOUR, digest="d1")
    await store.mark_run("alice", job_id, ran_ms=T0 + 2 * HOUR, next_run_ms=T0 + 3 * HOUR)
    job = await store.get("alice", job_id)
    assert job is not None and (job.last_digest, job.runs) == ("d1", 2)
    assert await store.set_digest("alice", job_id, "d2")
    assert not await store.set_digest("bob", job_id, "d3")
    job = await store.get("alice", job_id)
    assert job is not None and job.last_digest == "d2"


class Between:
    """A `Database` that runs `hook` (once) right after the first `fetch_one` returns: a
    write of another instance landing between a store's read and its write."""

    def __init__(self, db: Database, hook: Any) -> None:
        self._db, self._hook = db, hook

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)

    async def fetch_one(self, sql: str, params: Any = None) -> Any:
        row = await self._db.fetch_one(sql, params)
        if self._hook is not None:
            hook, self._hook = self._hook, None
            await hook()
        return row


async def test_a_pause_between_mark_runs_read_and_write_is_kept(open_db: OpenDb) -> None:
    """Another instance pauses the job while its run is being recorded: the record's one
    UPDATE reads the state where it writes it, so the job stays paused."""
    other = JobStore(await open_db(), next_run)
    job_id = await make(other, spec=f"every {HOUR}", next_run_ms=T0 + HOUR)
    racing = JobStore(Between(await open_db(), lambda: other.pause("alice", job_id)), next_run)  # type: ignore[arg-type]
    assert await racing.mark_run("alice", job_id, ran_ms=T0 + HOUR, next_run_ms=T0 + 2 * HOUR)
    job = await other.get("alice", job_id)
    assert job is not None and (job.state, job.runs, job.next_run_ms) == (
        "paused",
        1,
        T0 + 2 * HOUR,
    )


async def test_a_resume_racing_a_remove_or_another_resume_writes_once(open_db: OpenDb) -> None:
    other = JobStore(await open_db(), next_run)
    gone = await make(other)
    twice = await make(other)
    for job_id in (gone, twice):
        await other.pause("alice", job_id)
    removing = JobStore(Between(await open_db(), lambda: other.remove("alice", gone)), next_run)  # type: ignore[arg-type]
    assert not await removing.resume("alice", gone, T0)
    assert await other.get("alice", gone) is None
    resuming = JobStore(
        Between(await open_db(), lambda: other.resume("alice", twice, T0)),  # type: ignore[arg-type]
        next_run,
    )
    assert not await resuming.resume("alice", twice, T0)  # the other resume won
    job = await other.get("alice", twice)
    assert job is not None and job.state == "active"


async def test_the_limit_holds_for_creates_from_two_connections(open_db: OpenDb) -> None:
    """Two instances creating one tenant's jobs in turn: the count is read by the creating
    statement, so neither passes the limit (racing creates on PostgreSQL may: docstring)."""
    one = JobStore(await open_db(), next_run, JobLimits(max_jobs=5))
    two = JobStore(await open_db(), next_run, JobLimits(max_jobs=5))
    made = 0
    for store in (one, two, one, two, one):
        await make(store)
        made += 1
    for store in (one, two):
        with pytest.raises(LimitError):
            await make(store)
    assert len(await two.list_jobs("alice")) == made == 5


async def test_no_write_holds_a_transaction_across_an_await(backend: str, tmp_path: Path) -> None:
    """SQLite, while roost.db has two ways in: every job write is one statement (the rule
    of `bridge.schedule.outbox`), so no BEGIN is ever sent."""
    if backend != "sqlite":
        pytest.skip("the two-connection transition is SQLite's")
    database, statements = await traced(tmp_path / "roost.db")
    try:
        statements.clear()
        store = JobStore(database, next_run, JobLimits(max_jobs=2))
        one = await make(store, spec=f"every {HOUR}", next_run_ms=T0 + HOUR)
        two = await make(store)
        with pytest.raises(LimitError):
            await make(store)
        await store.pause("alice", one)
        await store.resume("alice", one, T0 + 3 * HOUR)
        await store.mark_run("alice", one, ran_ms=T0, next_run_ms=T0 + HOUR, digest="d")
        await store.mark_run("alice", two, ran_ms=T0, next_run_ms=None, error="boom")
        await store.set_digest("alice", one, "e")
        await store.prune_done(T0 + HOUR)
        await store.remove("alice", one)
    finally:
        await database.aclose()
    inserts = [s for s in statements if s.lstrip().upper().startswith("INSERT INTO JOBS")]
    assert len(inserts) == 3  # one statement per create, the refused one too
    assert not [s for s in statements if s.lstrip().upper().startswith("BEGIN")]


async def test_due_and_earliest_read_the_due_index_with_10000_jobs(
    backend: str, tmp_path: Path
) -> None:
    """SQLite's plans for what `due` and `earliest_ms` really run."""
    if backend != "sqlite":
        pytest.skip("SQLite's query plans")
    path = tmp_path / "roost.db"
    database, statements = await traced(path)
    try:
        store = JobStore(database, next_run)
        rows = [
            (
                f"t{t}",
                f"j{j:05d}",
                str(t),
                "active" if j % 3 else "paused",
                T0 + (t * 10 + j) * 1000,
            )
            for t in range(1000)
            for j in range(10)
        ]
        await database.execute_many(
            "INSERT INTO jobs (tenant, id, channel, chat, kind, spec, payload, tz, state,"
            " next_run_ms, created_ms) VALUES (?, ?, 'telegram', ?, 'turn', 'every 1', 'p',"
            f" 'UTC', ?, ?, {T0})",
            rows,
        )
        await database.execute("ANALYZE")
        assert await database.fetch_value("SELECT COUNT(DISTINCT tenant) FROM jobs") == 1000
        statements.clear()
        due = await store.due(T0 + 100_000, limit=50)
        await store.earliest_ms()
    finally:
        await database.aclose()
    assert len(due) == 50 and all(j.state == "active" for j in due)
    plain = sqlite3.connect(path)
    try:
        plans = [
            " | ".join(str(r[-1]) for r in plain.execute("EXPLAIN QUERY PLAN " + sql))
            for sql in statements
            if sql.lstrip().upper().startswith("SELECT")
        ]
    finally:
        plain.close()
    assert len(plans) == 2
    for plan in plans:
        assert "USING INDEX jobs_due" in plan and "SCAN" not in plan


async def test_concurrent_creates_of_two_tenants_all_land(open_db: OpenDb) -> None:
    one = JobStore(await open_db(), next_run, JobLimits(max_jobs=20))
    two = JobStore(await open_db(), next_run, JobLimits(max_jobs=20))
    made = await asyncio.gather(
        *(make(store, tenant=t) for store in (one, two) for t in ("a", "b") for _ in range(5))
    )
    assert len(made) == 20
    assert len(await one.list_jobs("a")) == len(await two.list_jobs("b")) == 10


async def test_a_create_on_a_full_database_is_told_as_a_full_disk(
    backend: str, db: Database
) -> None:
    """SQLite: the store's error keeps sqlite3's SQLITE_FULL as its cause, so the core says
    "the disk is full" (`bridge.core.diskfull`), not the generic error."""
    if backend != "sqlite":
        pytest.skip("SQLite's per-connection page cap")
    from bridge.core.diskfull import disk_full
    from bridge.storage.errors import StorageError

    store = JobStore(db, next_run, JobLimits(max_jobs=10_000))
    await make(store)
    pages = await db.fetch_value("PRAGMA page_count")
    await db.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(StorageError) as full:
        for n in range(10_000):  # until the pages run out
            await make(store, chat=str(n), payload="x" * 3900)
    assert disk_full(full.value)
